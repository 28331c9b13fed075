// Catch2 entry point of uopc-unittests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
