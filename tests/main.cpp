// doctest's main for kvlab_tests; the tests are in tests/test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
