#include "core/op_count.hpp"

namespace kvlab {
namespace {
thread_local MacCount* g_active = nullptr;
}

CountMacs::CountMacs() : previous_(g_active) { g_active = &count_; }
CountMacs::~CountMacs() { g_active = previous_; }
MacCount* active_mac_count() { return g_active; }

}  // namespace kvlab
