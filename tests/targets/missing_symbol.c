/* A library that calls a function no library defines, named MISSING_NAME
 * (given with -D): dlopen with RTLD_NOW refuses it, and its reason names
 * the function, as long as the test wants the reason to be. */
extern int MISSING_NAME(void);

int call_missing(void)
{
    return MISSING_NAME();
}
