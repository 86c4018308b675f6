#include NVIDIA_NCCL_H /* NVIDIA's header, by absolute path */

#include "values.h"
/* fill() needs the table type above. */
#include "fill.inc"

void nvidiaAbiValues(struct AbiValues* v) { fill(v); }
