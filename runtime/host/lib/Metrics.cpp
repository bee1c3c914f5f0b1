//===- Metrics.cpp - Training metrics as JSON lines -----------------------===//

#include "lruc/host/Metrics.h"

#include "lruc/host/Error.h"
#include "lruc/host/Safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lruc::host {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// JSON has no NaN or infinity; a diverged loss is written as null.
json number(double value) {
  return std::isfinite(value) ? json(value) : json(nullptr);
}

} // namespace

MetricsLog::MetricsLog(const fs::path &path, int64_t resumeStep)
    : path_(path) {
  if (resumeStep >= 0) {
    std::string kept;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      json entry = json::parse(line, nullptr, /*allow_exceptions=*/false);
      // Lines that are not ours (or half-written by a killed run) go.
      if (!entry.is_object() || !entry.contains("step") ||
          !entry["step"].is_number_integer() ||
          entry["step"].get<int64_t>() > resumeStep)
        continue;
      kept += line + "\n";
    }
    writeFileAtomically(path, kept);
  }
  file_ = std::fopen(path.c_str(), resumeStep >= 0 ? "a" : "w");
  if (!file_)
    throw HostError(fmt::format("{}: cannot open for writing: {}",
                                path.string(), std::strerror(errno)));
}

MetricsLog::~MetricsLog() {
  if (file_)
    std::fclose(file_);
}

void MetricsLog::write(const std::string &line) {
  if (std::fputs((line + "\n").c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw HostError(fmt::format("{}: cannot write: {}", path_.string(),
                                std::strerror(errno)));
}

void MetricsLog::train(int64_t step, int64_t epoch, double lr, double loss,
                       double accuracy, double time) {
  nlohmann::ordered_json line = {{"step", step},
                                 {"epoch", epoch},
                                 {"lr", number(lr)},
                                 {"loss", number(loss)},
                                 {"accuracy", number(accuracy)},
                                 {"time", std::round(time * 1000) / 1000}};
  write(line.dump());
}

void MetricsLog::eval(int64_t step, int64_t epoch, const std::string &split,
                      double loss, double accuracy, int64_t examples,
                      double time, double absoluteError) {
  nlohmann::ordered_json line = {{"step", step},
                                 {"epoch", epoch},
                                 {"split", split},
                                 {"loss", number(loss)},
                                 {"accuracy", number(accuracy)},
                                 {"examples", examples},
                                 {"time", std::round(time * 1000) / 1000}};
  if (!std::isnan(absoluteError))
    line["mae"] = number(absoluteError);
  write(line.dump());
}

std::vector<MetricsEntry> readMetrics(const fs::path &path) {
  std::ifstream in = openForReading(path);
  std::vector<MetricsEntry> entries;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto error = [&](const std::string &what) {
      return HostError(
          fmt::format("{}:{}: {}", path.string(), number, what));
    };
    json entry;
    try {
      entry = json::parse(line);
    } catch (const json::exception &e) {
      // A last line without its newline is one the run is writing now (or
      // was writing when it was killed): not a record yet.
      if (in.eof())
        break;
      // "[json.exception.parse_error.101] parse error at line 1, ...": the
      // part after the tag says where and why.
      std::string why = e.what();
      if (why.rfind('[', 0) == 0 && why.find("] ") != std::string::npos)
        why = why.substr(why.find("] ") + 2);
      // The parser saw one line: its "line 1" is the file's `number`.
      if (size_t at = why.find("at line 1, column "); at != std::string::npos)
        why.replace(at, std::strlen("at line 1, "), "at ");
      throw error("not JSON: " + why);
    }
    if (!entry.is_object())
      throw error("not a JSON object");
    MetricsEntry e;
    auto step = entry.find("step");
    if (step == entry.end() || !step->is_number_integer())
      throw error("no integer \"step\"");
    e.step = step->get<int64_t>();
    auto read = [&](const char *key, double &out) {
      auto it = entry.find(key);
      if (it == entry.end())
        return;
      if (it->is_null())
        out = NAN; // a non-finite value
      else if (it->is_number())
        out = it->get<double>();
      else
        throw error(fmt::format("\"{}\" is not a number", key));
    };
    if (auto split = entry.find("split"); split != entry.end()) {
      if (!split->is_string())
        throw error("\"split\" is not a string");
      e.split = split->get<std::string>();
    }
    e.loss = NAN;
    read("loss", e.loss);
    read("accuracy", e.accuracy);
    read("time", e.time);
    read("mae", e.absoluteError);
    entries.push_back(std::move(e));
  }
  if (entries.empty())
    throw HostError(fmt::format("{}: no records (a run that has not logged "
                                "its first steps yet?)",
                                path.string()));
  return entries;
}

} // namespace lruc::host
