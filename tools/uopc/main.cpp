//===- uopc - the ahead-of-time compiler for tinygrad UOp graphs ----------===//
#include "Driver/Driver.h"

int main(int argc, char **argv) { return uopc::uopcMain(argc, argv); }
