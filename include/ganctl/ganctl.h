/* SPDX-License-Identifier: MIT */
/* ganctl.h — the whole public interface of ganctl in one include.
 * Plugins include this and build with `pkg-config --cflags --libs ganctl`. */
#ifndef GANCTL_GANCTL_H
#define GANCTL_GANCTL_H

#include <ganctl/version.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/plugin.h>
#include <ganctl/grad_stats.h>
#include <ganctl/fp8.h>
#include <ganctl/backend.h>
#include <ganctl/philox.h>
#include <ganctl/tensor.h>
#include <ganctl/model.h>
#include <ganctl/loss.h>
#include <ganctl/scaler.h>
#include <ganctl/recipe.h>

#endif
