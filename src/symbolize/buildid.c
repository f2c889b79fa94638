/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * buildid.c - NT_GNU_BUILD_ID from an ELF image's PT_NOTE segments (see
 * buildid.h).  Notes are found by file offset, which in a loaded module's
 * first mapping (file offset 0) is the offset from its start.
 */
#include <elf.h>
#include <link.h>
#include <string.h>

#include "symbolize/buildid.h"

static int note_id(const unsigned char *p, size_t n, char *hex)
{
	while (n >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		size_t name, desc, i;

		memcpy(&nh, p, sizeof(nh));
		name = (nh.n_namesz + 3) & ~(size_t)3;
		desc = (nh.n_descsz + 3) & ~(size_t)3;
		if (name > n - sizeof(nh) || desc > n - sizeof(nh) - name)
			return -1;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + sizeof(nh), "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz * 2 <= RC_BUILD_ID_MAX) {
			const unsigned char *d = p + sizeof(nh) + name;

			for (i = 0; i < nh.n_descsz; i++) {
				hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
				hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
			}
			hex[2 * i] = '\0';
			return 0;
		}
		p += sizeof(nh) + name + desc;
		n -= sizeof(nh) + name + desc;
	}
	return -1;
}

int rc_build_id(const void *img, size_t size, char *hex)
{
	const unsigned char *b = img;
	ElfW(Ehdr) eh;
	unsigned i;

	if (size < sizeof(eh))
		return -1;
	memcpy(&eh, b, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 :
				     ELFCLASS32) ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(ElfW(Phdr)) < eh.e_phnum)
		return -1;
	for (i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;

		memcpy(&ph, b + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		if (!note_id(b + ph.p_offset, ph.p_filesz, hex))
			return 0;
	}
	return -1;
}
