/* memory.c - aligned scratch allocation (see common.h). */
#include "common.h"

#include <stdlib.h>

#define PYROI_SCRATCH_ALIGNMENT 64

/* malloc's own block, with the aligned pointer after it and the block's address stored just
 * before the aligned pointer (C99 has no aligned_alloc). */
void *pyroi_aligned_malloc(size_t bytes)
{
    unsigned char *block, *aligned;
    if (bytes > SIZE_MAX - PYROI_SCRATCH_ALIGNMENT - sizeof(void *)) {
        return NULL;
    }
    block = (unsigned char *)malloc(bytes + PYROI_SCRATCH_ALIGNMENT + sizeof(void *));
    if (block == NULL) {
        return NULL;
    }
    aligned = block + sizeof(void *);
    aligned += (PYROI_SCRATCH_ALIGNMENT - (uintptr_t)aligned % PYROI_SCRATCH_ALIGNMENT) %
               PYROI_SCRATCH_ALIGNMENT;
    ((void **)(void *)aligned)[-1] = block;
    return aligned;
}

void pyroi_aligned_free(void *pointer)
{
    if (pointer != NULL) {
        free(((void **)pointer)[-1]);
    }
}
