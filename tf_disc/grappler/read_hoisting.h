// Variable reads moved out of functional control flow, so that loops and
// conditionals carry tensors instead of resources (loop_support.h says
// which ones qualify).
#ifndef TF_DISC_GRAPPLER_READ_HOISTING_H_
#define TF_DISC_GRAPPLER_READ_HOISTING_H_

#include "tensorflow/core/framework/graph.pb.h"
#include "tf_disc/grappler/support_table.h"

namespace tf_disc {

// In every qualifying loop of `graph`, reads of a resource the loop carries
// unchanged move before the loop: a ReadVariableOp there (after the loop's
// control inputs), the loop carries the value, its cond and body become
// copies (added to the library) with Identity for the reads.  A qualifying
// conditional's resource arguments are read before it the same way, in the
// graph and first inside every library function (a loop body passing a
// weight to a tf.cond then reads it itself, with ReadVariableOp, and its
// loop qualifies).  Returns how many loops and conditionals changed.
int HoistInvariantReads(const SupportTable& table, tensorflow::GraphDef* graph);

}  // namespace tf_disc

#endif  // TF_DISC_GRAPPLER_READ_HOISTING_H_
