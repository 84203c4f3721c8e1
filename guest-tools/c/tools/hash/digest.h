/*
 * Streaming digests for the hash tool, implemented here from their
 * specifications (no external crypto library):
 *
 *   sha256   FIPS 180-4                      32-byte digest
 *   blake2s  RFC 7693, BLAKE2s-256, unkeyed  32-byte digest
 *   crc32    ISO-HDLC / IEEE 802.3 (as zlib, gzip and PNG;
 *            reflected, polynomial 0xEDB88320, init and final xor
 *            0xFFFFFFFF), slice-by-8; digest = the 32-bit value, big-endian
 *            (so its hex is the usual 8-digit form, e.g. cbf43926 for
 *            "123456789")
 *
 * Every function takes its input in pieces of any size: init once, update
 * any number of times, final once.
 */
#ifndef HASH_DIGEST_H
#define HASH_DIGEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes */
    uint8_t block[64];
    size_t fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);

typedef struct blake2s_ctx {
    uint32_t h[8];
    uint32_t t[2]; /* byte counter */
    uint8_t block[64];
    size_t fill;
} blake2s_ctx;

void blake2s_init(blake2s_ctx *c); /* 32-byte digest, no key */
void blake2s_update(blake2s_ctx *c, const void *data, size_t len);
void blake2s_final(blake2s_ctx *c, uint8_t out[32]);

uint32_t crc32_update(uint32_t crc, const void *data, size_t len); /* start with 0 */

typedef enum hash_algorithm { HASH_SHA256, HASH_BLAKE2S, HASH_CRC32 } hash_algorithm;

/* "sha256", "blake2s", "crc32"; false for anything else. */
int hash_algorithm_parse(const char *name, hash_algorithm *out);
const char *hash_algorithm_name(hash_algorithm a);
size_t hash_digest_size(hash_algorithm a); /* bytes: 32, 32, 4 */

typedef struct hasher {
    hash_algorithm alg;
    union {
        sha256_ctx sha256;
        blake2s_ctx blake2s;
        uint32_t crc32;
    } u;
} hasher;

void hasher_init(hasher *h, hash_algorithm alg);
void hasher_update(hasher *h, const void *data, size_t len);
/* Writes the lowercase hex digest and a NUL into hex (at least 65 bytes). */
void hasher_final_hex(hasher *h, char hex[65]);

#endif
