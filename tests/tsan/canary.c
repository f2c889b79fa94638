/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/tsan/canary.c: a deliberate data race (two threads increment one
 * counter without a lock), built with -fsanitize=thread, which
 * ThreadSanitizer must report.  tests/tsan/tsan.sh runs it with the same
 * runtime, preload and TSAN_OPTIONS as the shim's thread tests, to prove
 * that a report would be seen there and would fail the test.
 */
#include <pthread.h>
#include <stdio.h>

static int counter;
static pthread_barrier_t start;

static void *bump(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < 1000; i++)
		counter++;
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, bump, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("canary: %d\n", counter);
	return 0;
}
