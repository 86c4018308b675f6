#include "topology/graph_xml.hpp"

#include <sstream>

#include "topology/xml_util.hpp"

namespace chorus::topology {
namespace {

template <typename Kind, int N>
bool kindByName(const char* name, const char* (*nameOf)(Kind), Kind* out) {
  for (int k = 0; k < N; ++k) {
    if (std::string(nameOf(static_cast<Kind>(k))) == name) {
      *out = static_cast<Kind>(k);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string exportGraphXml(const SystemGraph& graph) {
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("chorus-topology");
  root.append_attribute("version") = 1;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& n = graph.nodes()[i];
    pugi::xml_node e = root.append_child("node");
    e.append_attribute("id") = static_cast<int>(i);
    e.append_attribute("kind") = nodeKindName(n.kind);
    if (n.kind != NodeKind::kHost && n.host >= 0) e.append_attribute("host") = n.host;
    e.append_attribute("name") = n.name.c_str();
    if (!n.busId.empty()) e.append_attribute("busid") = n.busId.c_str();
    if (n.cores > 0) e.append_attribute("cores") = n.cores;
    if (n.numa >= 0) e.append_attribute("numa") = n.numa;
    if (n.rank >= 0) e.append_attribute("rank") = n.rank;
    if (n.speedGbps > 0) e.append_attribute("speed_gbps") = n.speedGbps;
    if (!n.linkLayer.empty()) e.append_attribute("link_layer") = n.linkLayer.c_str();
  }
  for (const Link& l : graph.links()) {
    pugi::xml_node e = root.append_child("link");
    e.append_attribute("a") = l.a;
    e.append_attribute("b") = l.b;
    e.append_attribute("kind") = linkKindName(l.kind);
    e.append_attribute("bandwidth") = l.bandwidth;
    e.append_attribute("latency") = l.latency;
    e.append_attribute("lanes") = l.lanes;
  }
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

Status importGraphXml(const std::string& text, SystemGraph* graph) {
  if (!graph->nodes().empty()) return invalidUsage("chorus topology: import needs an empty graph");
  pugi::xml_document doc;
  CHORUS_TRY(xml::parse(text, "chorus topology", &doc));
  pugi::xml_node root = doc.child("chorus-topology");
  if (!root) {
    return invalidArgument("chorus topology: the root element is <" + std::string(doc.document_element().name()) +
                           ">, not <chorus-topology>");
  }
  long version = 0;
  CHORUS_TRY(xml::intAttribute(root, "version", 0, text, &version));
  if (version != 1) return invalidArgument(xml::describe(root, text) + ": version must be 1");
  for (pugi::xml_node e : root.children("node")) {
    Node n;
    if (!kindByName<NodeKind, 7>(e.attribute("kind").value(), nodeKindName, &n.kind)) {
      return invalidArgument(xml::describe(e, text) + ": unknown node kind \"" + e.attribute("kind").value() + "\"");
    }
    long id = -1, host = -1, cores = 0, numa = -1, rank = -1;
    CHORUS_TRY(xml::intAttribute(e, "id", -1, text, &id));
    if (id != static_cast<long>(graph->nodes().size())) {
      return invalidArgument(xml::describe(e, text) + ": node ids must count 0, 1, 2, ... in order");
    }
    CHORUS_TRY(xml::intAttribute(e, "host", -1, text, &host));
    CHORUS_TRY(xml::intAttribute(e, "cores", 0, text, &cores));
    CHORUS_TRY(xml::intAttribute(e, "numa", -1, text, &numa));
    CHORUS_TRY(xml::intAttribute(e, "rank", -1, text, &rank));
    CHORUS_TRY(xml::numberAttribute(e, "speed_gbps", 0, text, &n.speedGbps));
    n.linkLayer = e.attribute("link_layer").as_string();
    if (n.kind != NodeKind::kHost && n.kind != NodeKind::kNetwork &&
        (host < 0 || host >= id || graph->node(static_cast<int>(host)).kind != NodeKind::kHost)) {
      return invalidArgument(xml::describe(e, text) + ": host must name an earlier node of kind host");
    }
    n.host = static_cast<int>(host);
    n.name = e.attribute("name").value();
    n.busId = e.attribute("busid").value();
    n.cores = static_cast<int>(cores);
    n.numa = static_cast<int>(numa);
    n.rank = static_cast<int>(rank);
    graph->addNode(n);
  }
  const long nodes = static_cast<long>(graph->nodes().size());
  for (pugi::xml_node e : root.children("link")) {
    Link l;
    if (!kindByName<LinkKind, 5>(e.attribute("kind").value(), linkKindName, &l.kind)) {
      return invalidArgument(xml::describe(e, text) + ": unknown link kind \"" + e.attribute("kind").value() + "\"");
    }
    long a = -1, b = -1, lanes = 1;
    CHORUS_TRY(xml::intAttribute(e, "a", -1, text, &a));
    CHORUS_TRY(xml::intAttribute(e, "b", -1, text, &b));
    CHORUS_TRY(xml::intAttribute(e, "lanes", 1, text, &lanes));
    CHORUS_TRY(xml::numberAttribute(e, "bandwidth", 0, text, &l.bandwidth));
    CHORUS_TRY(xml::numberAttribute(e, "latency", 0, text, &l.latency));
    if (a < 0 || a >= nodes || b < 0 || b >= nodes || a == b) {
      return invalidArgument(xml::describe(e, text) + ": a and b must be two different node ids");
    }
    if (l.bandwidth <= 0) return invalidArgument(xml::describe(e, text) + ": bandwidth must be positive");
    l.a = static_cast<int>(a);
    l.b = static_cast<int>(b);
    l.lanes = static_cast<int>(lanes);
    graph->addLink(l, SystemGraph::Merge::kSame);
  }
  return Status::ok();
}

}  // namespace chorus::topology
