#define _POSIX_C_SOURCE 200809L /* dirent.h, stat() under -std=c99 */
/* 64-bit inode numbers and offsets on 32-bit systems too: without it readdir() fails with
 * EOVERFLOW on file systems with large inode numbers and the corpus looks empty. */
#define _FILE_OFFSET_BITS 64
/* replay_main.c - runs the libFuzzer harness fuzz_c_api.c without libFuzzer: each argument is
 * a file or a directory of files (a corpus), each file one input. Used by ctest (fuzz_corpus)
 * so that every kept input, crash reproducers included, stays a regression test with any
 * compiler. POSIX only (dirent.h). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    unsigned char *data;
    long size;
    if (file == NULL || fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 ||
        fseek(file, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (file != NULL) {
            fclose(file);
        }
        return 0;
    }
    data = (unsigned char *)malloc((size_t)size + 1);
    if (data == NULL || fread(data, 1, (size_t)size, file) != (size_t)size) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(data);
        fclose(file);
        return 0;
    }
    fclose(file);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return 1;
}

int main(int argc, char **argv)
{
    int i, count = 0, failures = 0;
    for (i = 1; i < argc; ++i) {
        struct stat info;
        if (stat(argv[i], &info) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            ++failures;
        } else if (S_ISDIR(info.st_mode)) {
            DIR *dir = opendir(argv[i]);
            struct dirent *entry;
            if (dir == NULL) {
                fprintf(stderr, "replay: cannot open the directory %s\n", argv[i]);
                ++failures;
            }
            while (dir != NULL && (entry = readdir(dir)) != NULL) {
                char path[4096];
                if (entry->d_name[0] == '.') {
                    continue;
                }
                snprintf(path, sizeof(path), "%s/%s", argv[i], entry->d_name);
                if (replay_file(path)) {
                    ++count;
                } else {
                    ++failures;
                }
            }
            if (dir != NULL) {
                closedir(dir);
            }
        } else if (replay_file(argv[i])) {
            ++count;
        } else {
            ++failures;
        }
    }
    printf("replay: %d inputs replayed, %d unreadable\n", count, failures);
    return failures == 0 && count > 0 ? 0 : 1;
}
