/// \file oar.h
/// Everything a C++ user of oar needs: tensors, ops, devices, the runtime.
#pragma once

#include "oar/autograd.h"
#include "oar/builder.h"
#include "oar/device.h"
#include "oar/dtype.h"
#include "oar/error.h"
#include "oar/op.h"
#include "oar/ops.h"
#include "oar/runtime.h"
#include "oar/store.h"
#include "oar/tensor.h"
