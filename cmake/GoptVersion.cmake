# Writes OUTPUT from INPUT with the current git revision. Run at build time (not only at
# configure time), so `gopt --version` and every results file name the commit that was
# actually built; configure_file leaves OUTPUT untouched when nothing changed.
# A revision is "-dirty" when tracked code differs from the commit; the committed results
# of the paper tables' runs (results/) are data and do not count.
# Usage: cmake -DSOURCE_DIR=... -DINPUT=... -DOUTPUT=... -DPROJECT_VERSION=... -P GoptVersion.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE GOPT_GIT_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GOPT_GIT_REVISION)
  set(GOPT_GIT_REVISION "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no -- . ":(exclude)results"
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE GOPT_GIT_CHANGES
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(GOPT_GIT_CHANGES)
    set(GOPT_GIT_REVISION "${GOPT_GIT_REVISION}-dirty")
  endif()
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
