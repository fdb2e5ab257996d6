/*
 * What every libFuzzer target in fuzz/ shares: the entry points libFuzzer
 * calls, and a check that turns a broken contract into a crash, so that a
 * wrong answer is a finding just as a memory error is (libFuzzer saves the
 * input that aborted).
 */
#ifndef MUSTER_FUZZ_FUZZ_H
#define MUSTER_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/** Called once per input; must return 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** Called once before the first input (optional). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Abort with the condition's text and where it is when cond is false. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: contract broken: %s\n", __FILE__, __LINE__,        \
			        #cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif /* MUSTER_FUZZ_FUZZ_H */
