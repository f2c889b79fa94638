/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * writers.c - rdmacheck-report: the small output helpers: JSON strings,
 * numbers, hex.
 */
#include "report_tool.h"

/* Numbers without printf(): most of the output is frames. */
void put_u(FILE *o, unsigned long long v)
{
	char buf[24], *p = buf + sizeof(buf);

	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), o);
}

/* "0x" and lowercase digits, as "0x%" PRIxPTR. */
void put_x(FILE *o, uintptr_t v)
{
	char buf[2 + 2 * sizeof(v)], *p = buf + sizeof(buf);

	do
		*--p = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	*--p = 'x';
	*--p = '0';
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), o);
}

/* Same escaping as the shim: invalid UTF-8 bytes become \u00XX. */
void put_jstr(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *end;
	size_t l;

	if (!s) {
		fputs("null", f);
		return;
	}
	end = p + strlen(s);
	fputc('"', f);
	while (p < end) {
		for (l = 0; p + l < end && plain(p[l]) && p[l] != 0x7f; l++)
			;
		if (l) {
			fwrite(p, 1, l, f);
			p += l;
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p++, f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, f);
		} else if ((l = utf8_len(p, end))) {
			fwrite(p, 1, l, f);
			p += l;
		} else {
			fprintf(f, "\\u%04x", *p++);
		}
	}
	fputc('"', f);
}

