/* Streaming digests: see digest.h. */
#include "digest.h"

#include <string.h>

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static uint32_t load_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void store_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* ── SHA-256 (FIPS 180-4) ───────────────────────────────────────────── */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void sha256_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) w[i] = load_be32(p + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void sha256_init(sha256_ctx *c) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->total = 0;
    c->fill = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len) {
    const uint8_t *p = data;
    c->total += len;
    if (c->fill) {
        size_t n = 64 - c->fill < len ? 64 - c->fill : len;
        memcpy(c->block + c->fill, p, n);
        c->fill += n, p += n, len -= n;
        if (c->fill < 64) return;
        sha256_block(c->h, c->block);
        c->fill = 0;
    }
    for (; len >= 64; p += 64, len -= 64) sha256_block(c->h, p);
    memcpy(c->block, p, len);
    c->fill = len;
}

void sha256_final(sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->total * 8;
    c->block[c->fill++] = 0x80;
    if (c->fill > 56) {
        memset(c->block + c->fill, 0, 64 - c->fill);
        sha256_block(c->h, c->block);
        c->fill = 0;
    }
    memset(c->block + c->fill, 0, 56 - c->fill);
    store_be32(c->block + 56, (uint32_t)(bits >> 32));
    store_be32(c->block + 60, (uint32_t)bits);
    sha256_block(c->h, c->block);
    for (int i = 0; i < 8; i++) store_be32(out + 4 * i, c->h[i]);
}

/* ── BLAKE2s-256 (RFC 7693) ─────────────────────────────────────────── */

static const uint32_t B2S_IV[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                                   0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};

static const uint8_t B2S_SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

#define B2S_G(a, b, c, d, x, y)                                                \
    do {                                                                       \
        v[a] = v[a] + v[b] + (x);                                              \
        v[d] = rotr(v[d] ^ v[a], 16);                                          \
        v[c] = v[c] + v[d];                                                    \
        v[b] = rotr(v[b] ^ v[c], 12);                                          \
        v[a] = v[a] + v[b] + (y);                                              \
        v[d] = rotr(v[d] ^ v[a], 8);                                           \
        v[c] = v[c] + v[d];                                                    \
        v[b] = rotr(v[b] ^ v[c], 7);                                           \
    } while (0)

static void blake2s_compress(blake2s_ctx *c, const uint8_t *block, int last) {
    uint32_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(block + 4 * i);
    for (int i = 0; i < 8; i++) v[i] = c->h[i], v[i + 8] = B2S_IV[i];
    v[12] ^= c->t[0];
    v[13] ^= c->t[1];
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 10; r++) {
        const uint8_t *s = B2S_SIGMA[r];
        B2S_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2S_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2S_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2S_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2S_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2S_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2S_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2S_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) c->h[i] ^= v[i] ^ v[i + 8];
}

static void blake2s_count(blake2s_ctx *c, uint32_t n) {
    c->t[0] += n;
    if (c->t[0] < n) c->t[1]++;
}

void blake2s_init(blake2s_ctx *c) {
    memcpy(c->h, B2S_IV, sizeof B2S_IV);
    c->h[0] ^= 0x01010000u ^ 32u; /* depth 1, fanout 1, no key, 32-byte digest */
    c->t[0] = c->t[1] = 0;
    c->fill = 0;
}

/* The last block is compressed only in final (with the last-block flag),
 * so a full buffer is kept until more input arrives. */
void blake2s_update(blake2s_ctx *c, const void *data, size_t len) {
    const uint8_t *p = data;
    while (len > 0) {
        if (c->fill == 64) {
            blake2s_count(c, 64);
            blake2s_compress(c, c->block, 0);
            c->fill = 0;
        }
        if (c->fill == 0 && len > 64) { /* whole blocks straight from the input */
            blake2s_count(c, 64);
            blake2s_compress(c, p, 0);
            p += 64, len -= 64;
            continue;
        }
        size_t n = 64 - c->fill < len ? 64 - c->fill : len;
        memcpy(c->block + c->fill, p, n);
        c->fill += n, p += n, len -= n;
    }
}

void blake2s_final(blake2s_ctx *c, uint8_t out[32]) {
    blake2s_count(c, (uint32_t)c->fill);
    memset(c->block + c->fill, 0, 64 - c->fill);
    blake2s_compress(c, c->block, 1);
    for (int i = 0; i < 8; i++) store_le32(out + 4 * i, c->h[i]);
}

/* ── CRC-32 (ISO-HDLC), slice-by-8 ──────────────────────────────────── */

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc32_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_ready = 1;
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t len) {
    if (!crc_ready) crc32_tables();
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = load_le32(p) ^ crc, hi = load_le32(p + 4);
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8, len -= 8;
    }
    while (len--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* ── one interface ──────────────────────────────────────────────────── */

int hash_algorithm_parse(const char *name, hash_algorithm *out) {
    if (strcmp(name, "sha256") == 0) *out = HASH_SHA256;
    else if (strcmp(name, "blake2s") == 0) *out = HASH_BLAKE2S;
    else if (strcmp(name, "crc32") == 0) *out = HASH_CRC32;
    else return 0;
    return 1;
}

const char *hash_algorithm_name(hash_algorithm a) {
    switch (a) {
    case HASH_SHA256: return "sha256";
    case HASH_BLAKE2S: return "blake2s";
    case HASH_CRC32: return "crc32";
    }
    return "?";
}

size_t hash_digest_size(hash_algorithm a) { return a == HASH_CRC32 ? 4 : 32; }

void hasher_init(hasher *h, hash_algorithm alg) {
    h->alg = alg;
    switch (alg) {
    case HASH_SHA256: sha256_init(&h->u.sha256); break;
    case HASH_BLAKE2S: blake2s_init(&h->u.blake2s); break;
    case HASH_CRC32: h->u.crc32 = 0; break;
    }
}

void hasher_update(hasher *h, const void *data, size_t len) {
    switch (h->alg) {
    case HASH_SHA256: sha256_update(&h->u.sha256, data, len); break;
    case HASH_BLAKE2S: blake2s_update(&h->u.blake2s, data, len); break;
    case HASH_CRC32: h->u.crc32 = crc32_update(h->u.crc32, data, len); break;
    }
}

void hasher_final_hex(hasher *h, char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    uint8_t d[32];
    size_t n = hash_digest_size(h->alg);
    switch (h->alg) {
    case HASH_SHA256: sha256_final(&h->u.sha256, d); break;
    case HASH_BLAKE2S: blake2s_final(&h->u.blake2s, d); break;
    case HASH_CRC32: store_be32(d, h->u.crc32); break;
    }
    for (size_t i = 0; i < n; i++) hex[2 * i] = digits[d[i] >> 4], hex[2 * i + 1] = digits[d[i] & 15];
    hex[2 * n] = '\0';
}
