/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * arena.c - rdmacheck-report: the arenas the model lives in: chunked bump
 * allocation, freed all at once.
 */
#include "report_tool.h"

/*
 * Allocations freed all at once.  Chunks start at 64 KiB and double up to
 * 4 MiB, so that a small report costs little and a big one few chunks.
 */
#define CHUNK_MIN (64u << 10)
#define CHUNK_MAX (4u << 20)

/* n zeroed objects of size bytes. */
void *aalloc(struct arena *a, size_t n, size_t size)
{
	struct chunk *c = a->head;
	size_t bytes;

	if (size && n > (SIZE_MAX / 2) / size)
		die("out of memory");
	bytes = (n * size + sizeof(max_align_t) - 1) &
		~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < bytes) {
		size_t csize;

		if (a->next < CHUNK_MIN)
			a->next = CHUNK_MIN;
		csize = bytes > a->next / 4 ? bytes : a->next;
		c = malloc(sizeof(*c) + csize);
		if (!c)
			die("out of memory");
		c->size = csize;
		c->used = 0;
		if (csize >= HUGE_PAGE)
			huge_pages(c, sizeof(*c) + csize);
		if (csize != a->next && a->head) {
			/* Its own chunk, behind the one still filling. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
			if (a->next < CHUNK_MAX)
				a->next *= 2;
		}
	}
	c->used += bytes;
	return memset((char *)c->data + c->used - bytes, 0, bytes);
}

char *astrdup(struct arena *a, const char *s)
{
	return strcpy(aalloc(a, strlen(s) + 1, 1), s);
}

void arena_free(struct arena *a)
{
	struct chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->next = 0;
}

