#ifndef SETTLE_CMALLOC_SHIM_H
#define SETTLE_CMALLOC_SHIM_H
// glibc's malloc tuning (mallopt), which the Glibc module does not import.
#include <malloc.h>
#endif
