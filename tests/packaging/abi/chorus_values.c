#include <nccl.h> /* chorus's */

#include "values.h"
/* fill() needs the table type above. */
#include "fill.inc"

void chorusAbiValues(struct AbiValues* v) { fill(v); }
