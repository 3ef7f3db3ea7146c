/* Linked with --build-id=none: its build-id is the second note of its
 * note segment, after a note of another vendor, so that a reader must step
 * over the first note to find it.  The id is the bytes 1, 2, ..., 20. */
#include <stdlib.h>

__asm__(".pushsection .note.mprof,\"a\",@note\n"
        ".balign 4\n"
        /* A foreign note: name "MPROF" (6 bytes, padded to 8), 4 bytes of description. */
        ".long 6, 4, 0x1234\n"
        ".asciz \"MPROF\"\n"
        ".balign 4\n"
        ".long 0x01020304\n"
        /* NT_GNU_BUILD_ID (3): name "GNU", 20 bytes of description. */
        ".long 4, 20, 3\n"
        ".asciz \"GNU\"\n"
        ".byte 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20\n"
        ".popsection\n");

int main(void)
{
    free(malloc(40));
    return 0;
}
