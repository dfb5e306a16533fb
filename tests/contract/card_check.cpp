// SPDX-License-Identifier: BSD-2-Clause
// card.h must compile as C++ too (the engine is C++): the same checks as
// the C program, compiled by the C++ compiler.
#include "card_check.c"  // NOLINT(bugprone-suspicious-include)
