# Writes OUTPUT from INPUT with the current git revision. Run at build time (not only at
# configure time), so `gopt --version` and every results file name the commit that was
# actually built; configure_file leaves OUTPUT untouched when nothing changed.
# Usage: cmake -DSOURCE_DIR=... -DINPUT=... -DOUTPUT=... -DPROJECT_VERSION=... -P GoptVersion.cmake
execute_process(COMMAND git describe --always --dirty --abbrev=12 --match=NeVeRmAtCh
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE GOPT_GIT_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GOPT_GIT_REVISION)
  set(GOPT_GIT_REVISION "unknown")
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
