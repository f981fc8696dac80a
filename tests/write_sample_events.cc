// Writes a sample TensorBoard run into the directory given as argv[1] through the
// embedded SummaryWriter: a graph, START, scalars, a histogram, a tensor summary with
// plugin metadata, a restart at step 3 (second file) and a checkpoint log. Used by the
// out-of-language check (read_events.py), which knows exactly what to expect.

#include <iostream>

#include "client/summary/summary_writer.h"
#include "core/kernels/summary/histogram.h"
#include "core/tensor.h"
#include "core/version.h"
#include "proto/graph.pb.h"

namespace overseer {
namespace {

int Main(const std::string& dir) {
  SummaryWriterOptions options;
  options.background_flush = false;
  auto writer = SummaryWriter::Create(dir, options);
  if (!writer.ok()) {
    std::cerr << writer.status() << "\n";
    return 1;
  }
  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("weights");
  node->set_op("VariableV2");
  graph.mutable_versions()->set_producer(kGraphDefProducer);
  absl::Status s = (*writer)->AddGraph(graph);
  if (s.ok()) s = (*writer)->AddSessionLog(SessionLog::START, 0);
  for (int step = 0; step < 5 && s.ok(); ++step) {
    Summary summary;
    Summary::Value* v = summary.add_value();
    v->set_tag("loss");
    v->set_simple_value(1.0f / (step + 1));
    if (step == 4) {
      Summary::Value* h = summary.add_value();
      h->set_tag("weights");
      Histogram histogram;
      for (double x : {-1.0, 0.5, 0.5, 2.0}) histogram.Add(x);
      histogram.EncodeToProto(h->mutable_histo());
      Summary::Value* t = summary.add_value();
      t->set_tag("accuracy");
      t->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
      t->mutable_metadata()->set_data_class(DATA_CLASS_SCALAR);
      Tensor::Scalar<float>(0.75f).ToProto(t->mutable_tensor());
    }
    s = (*writer)->AddSummary(summary, step);
  }
  if (s.ok()) s = (*writer)->AddSessionLog(SessionLog::START, 3);
  for (int step = 3; step < 5 && s.ok(); ++step) {
    Summary summary;
    Summary::Value* v = summary.add_value();
    v->set_tag("loss");
    v->set_simple_value(10.0f + step);
    s = (*writer)->AddSummary(summary, step);
  }
  if (s.ok()) s = (*writer)->AddSessionLog(SessionLog::CHECKPOINT, 4, dir + "/model.ckpt-4");
  if (s.ok()) s = (*writer)->Close();
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace overseer

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_events DIR\n";
    return 2;
  }
  return overseer::Main(argv[1]);
}
