/* A stand-in libroctx64.so for tests: each call is appended to the file ROCTX_LOG names. */
#include <stdio.h>
#include <stdlib.h>
static void put(const char *a, const char *b) { FILE *f = fopen(getenv("ROCTX_LOG"), "a"); fprintf(f, "%s%s\n", a, b); fclose(f); }
int roctxRangePushA(const char *m) { put("push ", m); return 0; }
int roctxRangePop(void) { put("pop", ""); return 0; }
