/* test_kv_cache.c: a KV cache costs resident memory only for the positions written, however
 * the allocator was used before it: opened, freed and opened again below glibc's raised mmap
 * threshold (as the precision study reopens SmolLM2, whose 16 x 4096-position stores are 25 MB
 * a layer), the cache must not clear (and so touch) its whole capacity. Also: positions written
 * read back, and a ring layer's capacity. Resident memory is read from /proc/self/statm
 * (skipped, 77, where there is none). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/kv_cache.h"

/* Resident bytes of this process, or -1. */
static long long resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size = 0, rss = -1;
    if (fscanf(f, "%lld %lld", &size, &rss) != 2) rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * (long long)sysconf(_SC_PAGESIZE);
}

/* Eight layers of 24 MiB stores (16 sequences x 768 positions x 1024 values, f16): each below
 * the 32 MiB that glibc's mmap threshold can rise to. */
static rf_hparams big_hparams(void) {
    rf_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_layer = 8;
    hp.n_head_kv = 8;
    hp.head_dim_k = hp.head_dim_v = 128;
    return hp;
}

static void test_reopen_untouched(void) {
    const rf_hparams hp = big_hparams();
    rf_error err = {0};
    /* a freed block just over the stores' size raises the mmap threshold above them */
    char *big = malloc((size_t)26 << 20);
    CHECK(big != NULL);
    if (big) big[0] = 1;
    free(big);
    rf_kv_cache kv;
    CHECK(rf_kv_cache_init(&kv, &hp, 16, 768, 16, &err) == RF_OK);
    char *pin = malloc(64); /* keeps what the cache frees from being trimmed off the heap */
    CHECK(pin != NULL);
    rf_kv_cache_free(&kv);
    const long long before = resident_bytes();
    CHECK(rf_kv_cache_init(&kv, &hp, 16, 768, 16, &err) == RF_OK);
    const long long after = resident_bytes();
    CHECK_MSG(after - before < (long long)(kv.bytes / 16),
              "reopening a cache of %zu bytes made %lld bytes resident", kv.bytes, after - before);
    /* writing one position of one sequence touches about a page per store, not the capacity */
    for (int il = 0; il < hp.n_layer; il++) {
        memset(rf_kv_k(&kv, il, 3, 700), 0x3c, (size_t)kv.k_row * 2);
        memset(rf_kv_v(&kv, il, 3, 700), 0x3c, (size_t)kv.v_row * 2);
    }
    CHECK(resident_bytes() - after < (long long)(kv.bytes / 16));
    rf_kv_cache_free(&kv);
    free(pin);
}

static void test_layout(void) {
    rf_hparams hp = big_hparams();
    hp.n_layer = 2;
    hp.n_head_kv = 2;
    hp.head_dim_k = 16;
    hp.head_dim_v = 8;
    hp.sliding_window = 32;
    hp.swa[1] = 1;
    rf_error err = {0};
    rf_kv_cache kv;
    CHECK(rf_kv_cache_init(&kv, &hp, 3, 256, 8, &err) == RF_OK);
    CHECK(kv.cap[0] == 256 && kv.cap[1] == 40); /* a ring of window + n_batch */
    CHECK(kv.k_row == 32 && kv.v_row == 16);
    CHECK(kv.bytes == (size_t)3 * (256 + 40) * (32 + 16) * 2);
    for (int il = 0; il < 2; il++) /* zeroed at first, then what was written */
        for (int32_t s = 0; s < 3; s++)
            for (int32_t p = 0; p < 256; p++) {
                CHECK(rf_kv_k(&kv, il, s, p)[5] == 0 || p >= kv.cap[il]);
                rf_kv_k(&kv, il, s, p)[5] = (uint16_t)(il * 1000 + s * 300 + p);
                rf_kv_v(&kv, il, s, p)[7] = (uint16_t)(il * 1000 + s * 300 + p + 1);
            }
    for (int32_t s = 0; s < 3; s++) {
        CHECK(rf_kv_k(&kv, 0, s, 17)[5] == s * 300 + 17);
        CHECK(rf_kv_v(&kv, 0, s, 255)[7] == s * 300 + 256);
        CHECK(rf_kv_k(&kv, 1, s, 255)[5] == 1000 + s * 300 + 255); /* the ring's last lap */
        CHECK(rf_kv_k(&kv, 1, s, 255 - 40)[5] == 1000 + s * 300 + 255);
    }
    rf_kv_cache_free(&kv);
    rf_kv_cache_free(&kv); /* freeing twice is harmless: the stores are forgotten */
}

int main(void) {
    if (resident_bytes() < 0) {
        fprintf(stderr, "skipped: no /proc/self/statm\n");
        return 77;
    }
    test_layout();
    test_reopen_untouched();
    return check_summary("test_kv_cache");
}
