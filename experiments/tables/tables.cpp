// `gopt table`'s entry points (experiments/tables/tables.h): which tables a results file gets
// (build_tables), the provenance warnings, and the Markdown and CSV renderings. Each table
// family is built in a file of its own (experiments/tables/families.h) from the file's
// Grid (experiments/tables/grid.h).
#include "experiments/tables/tables.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "experiments/tables/families.h"
#include "experiments/tables/grid.h"

namespace gopt::experiments {
namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// "steps 200, samples 400, seconds 60", each limit only when set.
std::string budget_text(const agents::TrainBudget& b) {
  std::string s = "steps " + std::to_string(b.max_steps);
  if (b.max_samples != agents::TrainBudget{}.max_samples) {
    s += ", samples " + std::to_string(b.max_samples);
  }
  if (std::isfinite(b.max_seconds)) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", b.max_seconds);
    s += std::string(", seconds ") + seconds;
  }
  return s;
}

// A table as CSV: a "# title" line, then header and rows, the notes as "# " lines.
void render_csv(const Table& t, std::ostream& out) {
  out << "# " << t.title << "\n";
  if (!t.header.empty()) {
    for (std::size_t i = 0; i < t.header.size(); ++i) {
      out << (i ? "," : "") << csv_cell(t.header[i]);
    }
    out << "\n";
  }
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_cell(row[i]);
    out << "\n";
  }
  for (const auto& n : t.notes) out << "# " << n << "\n";
}

// A table as Markdown: a heading, a pipe table (numbers right-aligned) and the notes.
void render_markdown(const Table& t, std::ostream& out) {
  out << "## " << t.title << "\n\n";
  if (!t.header.empty()) {
    std::vector<std::size_t> width(t.header.size(), 3);
    for (std::size_t i = 0; i < t.header.size(); ++i)
      width[i] = std::max(width[i], t.header[i].size());
    for (const auto& row : t.rows) {
      for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
        width[i] = std::max(width[i], row[i].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      out << "|";
      for (std::size_t i = 0; i < width.size(); ++i) {
        std::string c = i < cells.size() ? cells[i] : "";
        // Numbers right-aligned, text left-aligned.
        bool numeric = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) ||
                                      c[0] == '+' || c[0] == '-');
        std::string pad(width[i] - c.size(), ' ');
        out << " " << (numeric && i > 0 ? pad + c : c + pad) << " |";
      }
      out << "\n";
    };
    line(t.header);
    out << "|";
    for (std::size_t i = 0; i < width.size(); ++i) {
      out << (i == 0 ? ":" : "") << std::string(width[i] + (i == 0 ? 1 : 1), '-')
          << (i == 0 ? "" : ":") << "|";
    }
    out << "\n";
    for (const auto& row : t.rows) line(row);
    out << "\n";
  }
  for (const auto& n : t.notes) out << n << "\n";
}

}  // namespace

void remove_tables(std::vector<Table>& tables, const std::vector<std::string>& ids) {
  tables.erase(std::remove_if(tables.begin(), tables.end(),
                              [&](const Table& t) {
                                return std::find(ids.begin(), ids.end(), t.id) != ids.end();
                              }),
               tables.end());
}

std::vector<Table> build_tables(const ResultsFile& file) {
  std::vector<Table> out;
  tables::Grid g = tables::arrange(file);
  std::vector<std::string> seen;
  std::vector<std::string> held_out;
  for (const auto& w : g.workloads) (g.held_out[w] ? held_out : seen).push_back(w);
  const bool multitask = file.metadata.table == "multitask";
  const bool validation = file.metadata.table == "validation";
  if (!seen.empty()) {
    out.push_back(tables::placement_table(g, seen, "placement",
                                          "Placement: step time per workload and agent"));
    if (!validation && !multitask) {
      out.push_back(tables::bounds_table(g, seen, "placement_bounds",
                                         "Placement: lower bounds and optimality gaps", false));
    }
  }
  if (!held_out.empty()) {
    out.push_back(tables::placement_table(g, held_out, "generalization",
                                          "Generalization: step time on held-out graphs"));
    out.push_back(tables::bounds_table(g, held_out, "generalization_bounds",
                                       "Generalization: lower bounds and optimality gaps", false));
  }
  if (multitask && !g.workloads.empty()) {
    out.push_back(tables::multitask_table(g));
    out.push_back(tables::bounds_table(g, g.workloads, "multitask_bounds",
                                       "Multi-task: lower bounds and optimality gaps", true));
  }
  if (!validation && std::any_of(file.results.begin(), file.results.end(),
                                 [](const RunResult& r) { return !r.learning_curve.empty(); })) {
    out.push_back(tables::convergence_table(g));
  }
  if (file.metadata.table == "validation") out.push_back(tables::validation_table(file));
  if (!file.measurements.empty()) {
    for (auto& t : tables::measured_tables(file, g)) out.push_back(std::move(t));
  }
  if (!file.running.empty()) out.push_back(tables::running_table(file));
  if (out.empty()) {
    Table t;
    t.id = "empty";
    t.title = "No results";
    t.notes.push_back("The file holds no finished results yet.");
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> provenance_warnings(const ResultsFile& file) {
  // Distinct values in order of first appearance, with their counts of rows.
  using Counts = std::vector<std::pair<std::string, int>>;
  auto count = [](Counts& counts, const std::string& value) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == value; });
    if (it == counts.end()) {
      counts.emplace_back(value, 1);
    } else {
      ++it->second;
    }
  };
  auto listed = [](const Counts& counts) {
    std::string s;
    for (const auto& [value, n] : counts) {
      s += (s.empty() ? "" : "; ") + value + " (" + std::to_string(n) +
           (n == 1 ? " result)" : " results)");
    }
    return s;
  };
  Counts revisions;
  Counts cpu_paths;                                     // of the learners' rows
  std::vector<std::pair<std::string, Counts>> budgets;  // by agent label
  for (const auto& r : file.results) {
    if (!r.provenance.git_revision.empty()) count(revisions, r.provenance.git_revision);
    if (r.learner && !r.provenance.cpu_numerics.empty()) {
      count(cpu_paths, r.provenance.cpu_numerics);
    }
    if (!r.budget) continue;
    auto agent = std::find_if(budgets.begin(), budgets.end(),
                              [&](const auto& b) { return b.first == r.key.agent; });
    if (agent == budgets.end()) agent = budgets.insert(budgets.end(), {r.key.agent, {}});
    count(agent->second, budget_text(*r.budget));
  }
  std::vector<std::string> warnings;
  if (revisions.size() > 1) {
    warnings.push_back(
        "the results come from " + std::to_string(revisions.size()) +
        " git revisions, which may simulate or train differently: " + listed(revisions));
  }
  if (cpu_paths.size() > 1) {
    warnings.push_back("the learners' results come from " + std::to_string(cpu_paths.size()) +
                       " CPU code paths, whose float rounding sends training along different paths "
                       "(docs/agents.md \"Determinism and CPU code paths\"): " +
                       listed(cpu_paths));
  }
  for (const auto& [agent, counts] : budgets) {
    if (counts.size() > 1) {
      warnings.push_back(
          "agent " + agent + " trained under " + std::to_string(counts.size()) +
          " budgets, so its results are not comparable with each other: " + listed(counts));
    }
  }
  return warnings;
}

std::string render_tables(const std::vector<Table>& tables, TableFormat format) {
  std::ostringstream out;
  bool first = true;
  for (const auto& t : tables) {
    if (!first) out << "\n";
    first = false;
    if (format == TableFormat::kCsv) {
      render_csv(t, out);
    } else {
      render_markdown(t, out);
    }
  }
  return out.str();
}

}  // namespace gopt::experiments
