// doctest's main, alone in its translation unit (it is the heaviest header to compile).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
