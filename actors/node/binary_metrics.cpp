// The front door's binary metrics are the kernels' own: declared in both places, checked here
// to be the same functions (a declaration that differs from the other in its return type does
// not compile).
#include "actors/ps/binary_metrics.hpp"

#include "kernels/binary_metrics.hpp"
