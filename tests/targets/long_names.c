/* A leak path of 133 characters: main and three functions whose names are
 * 40 characters each, the innermost keeping one block of 64 bytes. */
#include <stdlib.h>

static void *kept;

void __attribute__((noinline)) innermost_function_with_a_forty_char_nam(void)
{
    kept = malloc(64);
}

void __attribute__((noinline)) middle_function_with_a_name_of_forty_cha(void)
{
    innermost_function_with_a_forty_char_nam();
}

void __attribute__((noinline)) outer_function_with_a_name_of_forty_char(void)
{
    middle_function_with_a_name_of_forty_cha();
}

int main(void)
{
    outer_function_with_a_name_of_forty_char();
    return kept == NULL;
}
