//===- Driver.h - the uopc command line, as a library function -------------===//
#pragma once

namespace uopc {

/// Runs `uopc` with these arguments. Returns the process exit code: 0 success, 1 bad input,
/// 2 bad usage.
int uopcMain(int argc, char **argv);

} // namespace uopc
