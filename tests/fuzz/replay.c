/* replay.c: runs LLVMFuzzerTestOneInput over every file of the corpus directories (or files)
 * named on the command line, without libFuzzer, so CI replays the seed corpus and the saved
 * crashers under ASan/UBSan with any compiler. Each input is read into a buffer of exactly its
 * size, so an overread is an ASan error. Exits 1 when nothing was run (a missing corpus). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return 0; /* skip non-files */
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    size_t got = buf ? fread(buf, 1, n, f) : 0;
    fclose(f);
    if (!buf || got != n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    long runs = 0;
    int errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            int r = run_file(argv[i]);
            if (r < 0) errors++;
            runs += r > 0;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            errors++;
            continue;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char **nn = realloc(names, (n + 1) * sizeof *nn);
            if (!nn) break;
            names = nn;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[n] = malloc(len);
            if (!names[n]) break;
            snprintf(names[n], len, "%s/%s", argv[i], e->d_name);
            n++;
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, cmp_names); /* a stable order for logs */
        for (size_t k = 0; k < n; k++) {
            int r = run_file(names[k]);
            if (r < 0) errors++;
            runs += r > 0;
            free(names[k]);
        }
        free(names);
    }
    fprintf(stderr, "replay: %ld inputs run, %d errors\n", runs, errors);
    return (errors || runs == 0) ? 1 : 0;
}
