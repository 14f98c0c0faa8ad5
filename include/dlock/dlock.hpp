// dlock/dlock.hpp: everything public, in one include.
#pragma once

#include "dlock/error.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/log.hpp"
#include "dlock/mutex.hpp"
#include "dlock/session.hpp"
#include "dlock/shared_mutex.hpp"
