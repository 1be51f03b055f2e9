// The paper's tables from a results file (`gopt table`): placement (Table 1),
// generalization to held-out graphs (Table 2), multi-task speedups (Table 3) and simulator
// validation. Columns follow the agents in the order they appear in the file, so new
// agents show up without changes here.
//
//   ResultsFile file = read_results_file("results/quickstart.h5");
//   std::cout << render_tables(build_tables(file), TableFormat::kMarkdown);
#pragma once

#include <string>
#include <vector>

#include "experiments/results/results_file.h"

namespace gopt::experiments {

enum class TableFormat { kMarkdown, kCsv };

/// One table: a title, a header row, body rows of cell text and notes printed under it.
struct Table {
  std::string id;  ///< placement, generalization, multitask, validation
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
};

/// Every table the file has data for. Step times are means over seeds in milliseconds;
/// a cell is "OOM" when every seed ran out of memory.
[[nodiscard]] std::vector<Table> build_tables(const ResultsFile& file);

/// Removes the tables whose id is among `ids`.
void remove_tables(std::vector<Table>& tables, const std::vector<std::string>& ids);

/// What a reader must know about where the rows came from, one sentence each: that they
/// mix git revisions (each with its count of rows), and for each agent label whose rows
/// mix training budgets, which budgets. Empty when every row comes from one revision and
/// each agent from one budget, and for rows without provenance (format version 1).
///
///   for (const auto& w : provenance_warnings(file)) std::cerr << "gopt: warning: " << w;
[[nodiscard]] std::vector<std::string> provenance_warnings(const ResultsFile& file);

/// Markdown (a heading, a pipe table and notes per table) or CSV (a "# title" line, then
/// header and rows, tables separated by a blank line).
[[nodiscard]] std::string render_tables(const std::vector<Table>& tables, TableFormat format);

}  // namespace gopt::experiments
