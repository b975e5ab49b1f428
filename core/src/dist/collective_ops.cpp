// collective_ops.cpp: see core/src/dist/dist_internal.h (filled by the semi-auto-parallel work).
#include "dist/dist_internal.h"
