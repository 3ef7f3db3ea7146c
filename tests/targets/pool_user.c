/* Takes 7 objects of 10 bytes from pool_library.c's pool, and keeps them. */
#include <stddef.h>

void library_start(void);
void *library_object(size_t size);

int main(void)
{
    library_start();
    for (int i = 0; i < 7; i++)
        library_object(10);
    return 0;
}
