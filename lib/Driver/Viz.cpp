//===- Viz.cpp - uopc --viz: the page's data and its layout ----------------===//
// Every region (the top level of a step, or one kernel body) is described once, however many steps show
// it: hash-consing makes "the same region" one pointer. Its nodes are numbered as the text form numbers
// them (IR/AsmPrinter.h), so %12 on the page is %12 in `--print-after`.
//
// Layout, per region (all iterative, O(iterations x edges + nodes log nodes)):
//  1. layers: a node sits one layer above its highest user (the root at the bottom, every value just
//     above where it is first used);
//  2. order within a layer: barycenter sweeps, down (by the sources' positions) and up (by the users');
//  3. x: each layer placed as close as possible to the mean x of its neighbours without overlaps: a
//     least-squares fit under minimum-spacing constraints, solved exactly by pool-adjacent-violators.
// Coordinates are rounded to integers: the same graph gives the same page, byte for byte.
#include "Driver/Viz.h"

#include "Driver/OutputDir.h"
#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "Passes/Schedule.h"
#include "Targets/Targets.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace uopc {

std::string_view vizPageTemplate(); // VizPage.cpp

namespace {

constexpr int kNodeHeight = 34, kLayerGap = 34, kNodeGap = 14, kMargin = 24;
constexpr double kCharWidth = 6.7; // 11px monospace
constexpr size_t kLabelChars = 30;

/// Appends `s` as a JSON string that is also safe inside an HTML <script> element: '<' is escaped (no
/// "</script>" or "<!--" can appear), control characters too, and bytes that are not valid UTF-8 become
/// U+FFFD.
void jsonString(std::string &out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // a well-formed UTF-8 sequence is copied; anything else is one replacement character
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0); // overlong, surrogate
    }
    if (ok && len == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

/// Characters of a UTF-8 string (for label widths).
size_t charCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

/// The first `n` characters of a UTF-8 string, with an ellipsis when it was longer.
std::string clip(const std::string &s, size_t n) {
  if (charCount(s) <= n) return s;
  size_t chars = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == n - 1) break;
  }
  return s.substr(0, i) + "\xE2\x80\xA6"; // …
}

struct Placed {
  std::vector<int> x, y; ///< centres
  int width = 0, height = 0;
};

/// Lays out a DAG whose edges go from a lower id to a higher one (srcs[i] < i): see the file comment.
Placed layout(const std::vector<std::vector<uint32_t>> &srcs, const std::vector<int> &widths) {
  size_t n = srcs.size();
  Placed p;
  p.x.assign(n, 0);
  p.y.assign(n, 0);
  if (n == 0) return p;
  // users, as CSR
  std::vector<uint32_t> ustart(n + 1, 0), users;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t s : srcs[i]) ustart[s + 1]++;
  for (size_t i = 0; i < n; ++i) ustart[i + 1] += ustart[i];
  users.resize(ustart[n]);
  {
    std::vector<uint32_t> fill(ustart.begin(), ustart.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (uint32_t s : srcs[i]) users[fill[s]++] = static_cast<uint32_t>(i);
  }
  // 1. layers
  std::vector<uint32_t> h(n, 0);
  uint32_t maxH = 0;
  for (size_t i = n; i-- > 0;) {
    for (uint32_t k = ustart[i]; k < ustart[i + 1]; ++k) h[i] = std::max(h[i], h[users[k]] + 1);
    maxH = std::max(maxH, h[i]);
  }
  std::vector<std::vector<uint32_t>> layers(maxH + 1);
  std::vector<uint32_t> layerOf(n);
  for (size_t i = 0; i < n; ++i) {
    layerOf[i] = maxH - h[i];
    layers[layerOf[i]].push_back(static_cast<uint32_t>(i));
  }
  // 2. order: barycenters of normalized positions
  std::vector<double> pos(n);
  auto setPos = [&](const std::vector<uint32_t> &layer) {
    for (size_t k = 0; k < layer.size(); ++k) pos[layer[k]] = (double(k) + 0.5) / double(layer.size());
  };
  for (auto &l : layers) setPos(l);
  std::vector<double> key(n);
  auto sweep = [&](bool down) {
    for (size_t li = 0; li < layers.size(); ++li) {
      auto &layer = layers[down ? li : layers.size() - 1 - li];
      for (uint32_t u : layer) {
        double sum = 0;
        size_t cnt = 0;
        if (down)
          for (uint32_t s : srcs[u]) sum += pos[s], ++cnt;
        else
          for (uint32_t k = ustart[u]; k < ustart[u + 1]; ++k) sum += pos[users[k]], ++cnt;
        key[u] = cnt ? sum / double(cnt) : pos[u];
      }
      std::stable_sort(layer.begin(), layer.end(), [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
      setPos(layer);
    }
  };
  for (int it = 0; it < 4; ++it) {
    sweep(true);
    sweep(false);
  }
  // 3. x: pack each layer, then fit to the neighbours' mean under spacing constraints
  std::vector<double> x(n);
  for (auto &layer : layers) {
    double cur = 0;
    for (uint32_t u : layer) {
      x[u] = cur + widths[u] / 2.0;
      cur += widths[u] + kNodeGap;
    }
    double shift = -cur / 2; // centre every layer on 0
    for (uint32_t u : layer) x[u] += shift;
  }
  std::vector<double> target, weight, offset;
  std::vector<size_t> blockEnd;
  std::vector<double> blockVal, blockW;
  auto fit = [&](const std::vector<uint32_t> &layer, int mode) { // 0: sources, 1: users, 2: both
    size_t m = layer.size();
    target.assign(m, 0);
    weight.assign(m, 1);
    offset.assign(m, 0);
    for (size_t k = 0; k < m; ++k) {
      uint32_t u = layer[k];
      double sum = 0;
      size_t cnt = 0;
      if (mode != 1)
        for (uint32_t s : srcs[u]) sum += x[s], ++cnt;
      if (mode != 0)
        for (uint32_t q = ustart[u]; q < ustart[u + 1]; ++q) sum += x[users[q]], ++cnt;
      target[k] = cnt ? sum / double(cnt) : x[u];
      weight[k] = cnt ? 1.0 : 0.25;
      if (k) offset[k] = offset[k - 1] + (widths[layer[k - 1]] + widths[u]) / 2.0 + kNodeGap;
    }
    // minimize sum w_k (x_k - target_k)^2 with x_{k+1} - x_k >= spacing: y_k = x_k - offset_k is
    // nondecreasing, so this is isotonic regression of target - offset (pool adjacent violators)
    blockEnd.clear();
    blockVal.clear();
    blockW.clear();
    for (size_t k = 0; k < m; ++k) {
      double v = target[k] - offset[k], w = weight[k];
      size_t end = k + 1;
      while (!blockVal.empty() && blockVal.back() >= v) {
        v = (v * w + blockVal.back() * blockW.back()) / (w + blockW.back());
        w += blockW.back();
        blockVal.pop_back();
        blockW.pop_back();
        blockEnd.pop_back();
      }
      blockVal.push_back(v);
      blockW.push_back(w);
      blockEnd.push_back(end);
    }
    size_t k = 0;
    for (size_t b = 0; b < blockVal.size(); ++b)
      for (; k < blockEnd[b]; ++k) x[layer[k]] = blockVal[b] + offset[k];
  };
  for (int it = 0; it < 6; ++it) {
    bool down = it % 2 == 0;
    for (size_t li = 0; li < layers.size(); ++li) fit(layers[down ? li : layers.size() - 1 - li], down ? 0 : 1);
  }
  for (auto &layer : layers) fit(layer, 2);
  double minX = 0, maxX = 0;
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    double l = x[i] - widths[i] / 2.0, r = x[i] + widths[i] / 2.0;
    minX = first ? l : std::min(minX, l);
    maxX = first ? r : std::max(maxX, r);
    first = false;
  }
  for (size_t i = 0; i < n; ++i) {
    p.x[i] = static_cast<int>(std::lround(x[i] - minX)) + kMargin;
    p.y[i] = static_cast<int>(layerOf[i]) * (kNodeHeight + kLayerGap) + kNodeHeight / 2 + kMargin;
  }
  p.width = static_cast<int>(std::lround(maxX - minX)) + 2 * kMargin;
  p.height = static_cast<int>(layers.size()) * (kNodeHeight + kLayerGap) - kLayerGap + 2 * kMargin;
  return p;
}

std::string kernelName(const UOp *body) {
  if ((body->op == Op::SINK || body->op == Op::LINEAR) && body->arg && body->arg->kind == ArgKind::Record)
    if (const Arg *n = body->arg->field("name"); n && n->kind == ArgKind::String) return std::string(n->str());
  return "";
}

/// Builds the page's data.
class PageData {
public:
  PageData(const Graph &g, const VizRecorder &rec, const std::vector<VizKernelSource> &sources)
      : g_(g), rec_(rec), sources_(sources) {}

  std::string json(const VizInfo &info) {
    for (size_t i = 0; i < sources_.size(); ++i) {
      sourceOfBody_[sources_[i].body] = i;
      std::string name = kernelName(sources_[i].body);
      if (!name.empty()) sourceOfName_.try_emplace(name, i);
    }
    std::string steps;
    NodeMap<uint32_t> lastSeen{0}; // the stamp of the last distinct graph a node was in
    uint32_t stamp = 0;
    std::vector<int> regionIds;
    std::string news;
    size_t total = 0, newCount = 0;
    const UOp *prevRoot = nullptr;
    for (size_t si = 0; si < rec_.steps().size(); ++si) {
      const VizRecorder::Step &st = rec_.steps()[si];
      if (st.root != prevRoot) { // else: the same graph, the same regions, nothing new
        AsmPrinter printer(g_, st.root);
        const auto &regs = printer.regions();
        regionIds.assign(regs.size(), -1);
        std::vector<size_t> fresh;
        for (size_t r = 0; r < regs.size(); ++r) {
          auto [it, isNew] = regionIndex_.try_emplace({regs[r].root, regs[r].isKernel}, int(regionNodes_.size()));
          if (isNew) {
            regionNodes_.push_back(regs[r].nodes.size());
            fresh.push_back(r);
          }
          regionIds[r] = it->second;
        }
        for (size_t r : fresh) describe(printer, r, regionIds);
        // new nodes: in no region of the previous graph. Mark every region, then stamp (a node in two
        // regions of this graph must not read as new in the second).
        news.clear();
        total = newCount = 0;
        for (size_t r = 0; r < regs.size(); ++r) {
          std::string ids;
          for (size_t k = 0; k < regs[r].nodes.size(); ++k) {
            if (si > 0 && lastSeen.get(regs[r].nodes[k]) != stamp) {
              ids += (ids.empty() ? "" : ",") + std::to_string(k);
              ++newCount;
            }
          }
          total += regs[r].nodes.size();
          if (!ids.empty())
            news += (news.empty() ? "\"" : ",\"") + std::to_string(regionIds[r]) + "\":[" + ids + "]";
        }
        ++stamp;
        for (const AsmRegion &reg : regs)
          for (const UOp *u : reg.nodes) lastSeen[u] = stamp;
      } else {
        news.clear();
        newCount = 0;
      }
      prevRoot = st.root;
      if (si) steps += ",\n";
      steps += "{\"name\":";
      jsonString(steps, st.name);
      steps += ",\"changed\":";
      steps += st.changed ? "true" : "false";
      steps += ",\"top\":" + std::to_string(regionIds.back()) + ",\"kernels\":[";
      for (size_t k = 0; k + 1 < regionIds.size(); ++k) steps += (k ? "," : "") + std::to_string(regionIds[k]);
      steps += "],\"nodes\":" + std::to_string(total) + ",\"newCount\":" + std::to_string(newCount);
      steps += ",\"new\":{" + news + "}}";
    }
    std::string out = "{\"info\":{\"input\":";
    jsonString(out, info.input);
    out += ",\"target\":";
    jsonString(out, info.target);
    out += ",\"language\":";
    jsonString(out, info.language);
    out += ",\"note\":";
    jsonString(out, info.note);
    out += ",\"failure\":";
    jsonString(out, info.failure);
    out += ",\"maxRegionNodes\":" + std::to_string(kVizMaxRegionNodes);
    out += "},\n\"groups\":{";
    bool firstGroup = true;
    static const char *groupNames[] = {"define", "meta", "mem", "unary", "binary", "ternary",
                                       "control", "const", "buffer", "movement", "reduce"};
    for (unsigned o = 0; o < kNumOps; ++o) {
      Op op = static_cast<Op>(o);
      out += firstGroup ? "" : ",";
      firstGroup = false;
      jsonString(out, opName(op));
      out += ':';
      jsonString(out, groupNames[static_cast<int>(opGroup(op))]);
    }
    out += "},\n\"sources\":[";
    for (size_t i = 0; i < sources_.size(); ++i) {
      out += i ? ",\n{\"kernel\":" : "\n{\"kernel\":";
      jsonString(out, kernelName(sources_[i].body));
      out += ",\"device\":";
      jsonString(out, sources_[i].device);
      out += ",\"text\":";
      jsonString(out, sources_[i].text);
      out += '}';
    }
    out += "],\n\"steps\":[\n" + steps + "],\n\"regions\":[\n" + regions_ + "]}";
    return out;
  }

private:
  const Graph &g_;
  const VizRecorder &rec_;
  const std::vector<VizKernelSource> &sources_;
  std::unordered_map<const UOp *, size_t> sourceOfBody_;
  std::map<std::string, size_t> sourceOfName_;
  std::map<std::pair<const UOp *, bool>, int> regionIndex_;
  std::vector<size_t> regionNodes_;
  std::string regions_;

  /// Appends the description of region `r` of `printer`; `ids` maps the printer's regions to the page's.
  void describe(AsmPrinter &printer, size_t r, const std::vector<int> &ids) {
    const AsmRegion &reg = printer.regions()[r];
    int index = ids[r];
    printer.enter(r);
    std::string &out = regions_;
    if (index) out += ",\n";
    out += "{\"name\":";
    jsonString(out, reg.name);
    out += ",\"kernel\":";
    out += reg.isKernel ? "true" : "false";
    out += ",\"count\":" + std::to_string(reg.nodes.size());
    if (reg.isKernel) {
      auto s = sourceOfBody_.find(reg.root);
      if (s != sourceOfBody_.end()) {
        out += ",\"source\":" + std::to_string(s->second);
      } else if (auto byName = sourceOfName_.find(reg.name); byName != sourceOfName_.end()) {
        out += ",\"source\":" + std::to_string(byName->second) + ",\"sourceIsLater\":true";
      }
    }
    if (reg.nodes.size() > kVizMaxRegionNodes) {
      std::map<std::string_view, size_t> ops;
      for (const UOp *u : reg.nodes) ops[opName(u->op)]++;
      out += ",\"big\":true,\"ops\":{";
      bool first = true;
      for (auto &[op, c] : ops) {
        out += first ? "" : ",";
        first = false;
        jsonString(out, op);
        out += ":" + std::to_string(c);
      }
      out += "}}";
      return;
    }
    size_t n = reg.nodes.size();
    std::vector<std::vector<uint32_t>> srcs(n);
    std::vector<int> widths(n);
    std::string nodes;
    for (size_t i = 0; i < n; ++i) {
      const UOp *u = reg.nodes[i];
      std::string arg = printer.argText(u), shape = printer.shapeText(u), device = printer.deviceText(u);
      std::string label1 = std::string(opName(u->op)) + " %" + std::to_string(i);
      std::string label2;
      int callee = -1;
      if (u->op == Op::CALL && u->nsrc) {
        callee = printer.regionOf(u->src(0));
        label2 = printer.operand(u, 0);
      } else if (!arg.empty()) {
        label2 = clip(arg, kLabelChars);
      } else if (!shape.empty()) {
        label2 = clip(shape, kLabelChars);
      } else {
        label2 = std::string(dtypeName(u->dtype));
      }
      widths[i] = static_cast<int>(std::lround(12 + kCharWidth * double(std::max(charCount(label1), charCount(label2)))));
      if (i) nodes += ",\n";
      nodes += "[";
      jsonString(nodes, opName(u->op));
      nodes += ',';
      jsonString(nodes, dtypeName(u->dtype));
      nodes += ',';
      jsonString(nodes, arg);
      nodes += ',';
      jsonString(nodes, shape);
      nodes += ',';
      jsonString(nodes, device);
      nodes += ",[";
      // sources (a CALL's body is not one: it is the callee), then the nodes its arg and tag refer to
      bool firstSrc = true;
      for (size_t k = u->op == Op::CALL ? 1 : 0; k < u->nsrc; ++k) {
        int64_t s = printer.id(u->src(k));
        if (s < 0) continue;
        srcs[i].push_back(static_cast<uint32_t>(s));
        nodes += (firstSrc ? "" : ",") + std::to_string(s);
        firstSrc = false;
      }
      for (const UOp *ref : printer.refs(u)) {
        int64_t s = printer.id(ref);
        if (s < 0) continue;
        srcs[i].push_back(static_cast<uint32_t>(s));
        nodes += (firstSrc ? "" : ",") + std::to_string(s);
        firstSrc = false;
      }
      nodes += "],";
      jsonString(nodes, label2);
      nodes += ',';
      nodes += std::to_string(callee >= 0 ? ids[size_t(callee)] : -1);
      nodes += ',';
      jsonString(nodes, printer.tagText(u));
      nodes += ']';
    }
    Placed p = layout(srcs, widths);
    out += ",\"W\":" + std::to_string(p.width) + ",\"H\":" + std::to_string(p.height) + ",\"xy\":[";
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      out += std::to_string(p.x[i]) + "," + std::to_string(p.y[i]) + "," + std::to_string(widths[i]);
    }
    out += "],\n\"nodes\":[\n" + nodes + "]}";
  }
};

} // namespace

void checkVizPath(const std::string &file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path parent = fs::path(file).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec)) fail("--viz: cannot write '" + file + "': no directory '" + parent.string() + "'");
  if (fs::is_directory(file, ec)) fail("--viz: cannot write '" + file + "': it is a directory");
}

void writeVizPage(const std::string &file, const std::string &input, const Module &m, const VizRecorder &rec,
                  const std::string &failure) {
  VizInfo info;
  info.input = input;
  info.target = m.target.name;
  info.language = m.renderer->language();
  info.failure = failure;
  std::vector<VizKernelSource> sources;
  const Schedule *s = m.schedule();
  if (!failure.empty()) {
    info.note = "not rendered: the pipeline stopped";
  } else if (!m.notRendered.empty()) {
    info.note = "not rendered: " + m.notRendered;
  } else if (!s) {
    info.note = "not rendered: the graph has no current schedule (the pipeline's last passes changed more than kernel "
                "bodies, or it ran no schedule pass)";
  } else {
    // each distinct kernel body once, with the device of the first step that runs it
    std::unordered_set<const UOp *> done;
    for (size_t i = 0; i < s->steps.size() && i < m.stepKernel.size(); ++i) {
      const SchedStep &st = s->steps[i];
      if (st.kind != SchedStep::Kind::Kernel || !done.insert(st.call->src(0)).second) continue;
      const ModuleKernel &k = m.kernels[m.stepKernel[i]];
      sources.push_back({st.call->src(0), s->devices[st.device],
                         k.error.empty() ? m.renderer->source(k.pieces) : "not rendered: " + k.error});
    }
  }
  writeFileAtomic(file, vizHtml(m.graph, rec, sources, info));
}

std::string vizHtml(const Graph &g, const VizRecorder &rec, const std::vector<VizKernelSource> &sources,
                    const VizInfo &info) {
  if (rec.steps().empty()) fail("--viz: no graph was recorded");
  PageData data(g, rec, sources);
  std::string json = data.json(info);
  std::string_view page = vizPageTemplate();
  static constexpr std::string_view kData = "/*UOPC_DATA*/", kTitle = "<!--UOPC_TITLE-->";
  size_t d = page.find(kData), t = page.find(kTitle);
  if (d == std::string_view::npos || t == std::string_view::npos || t > d) fail("--viz: the page template is broken");
  std::string title;
  for (char c : "uopc: " + info.input) {
    if (c == '<') title += "&lt;";
    else if (c == '&') title += "&amp;";
    else if (c == '>') title += "&gt;";
    else title += c;
  }
  std::string out;
  out.reserve(page.size() + json.size() + title.size());
  out.append(page.substr(0, t));
  out += title;
  out.append(page.substr(t + kTitle.size(), d - t - kTitle.size()));
  out += json;
  out.append(page.substr(d + kData.size()));
  return out;
}

} // namespace uopc
