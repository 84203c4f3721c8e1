/*
 * The `hash` component: file checksums in the granted directories.
 *
 *   hash_file  {path, algorithm?, offset?, length?}
 *              -> {path, algorithm, digest, bytes, offset, size}
 *   hash_tree  {path, algorithm?, glob?, max_files?, hidden?}
 *              -> {path, algorithm, files: [{path, digest, bytes}], file_count,
 *                  total_bytes, truncated, skipped, errors, error_count}
 *
 * Files are read through one fixed 64 KiB buffer, never whole. hash_tree
 * walks directories in an order that yields paths sorted bytewise (each
 * directory's entries sorted with a '/' appended to directory names), so
 * it can stop after `max_files` files and still return the first ones in
 * sorted order.
 *
 * While they run (contract 0.3.0's context): hash_tree reports progress
 * after each file (files hashed so far, the file's path) and checks for
 * cancellation before each file; hash_file reports progress after each
 * mebibyte of a larger file (bytes hashed of the bytes to hash) and checks
 * for cancellation before each 64 KiB chunk. Either then fails with
 * `cancelled`. Past the call's deadline the host's `cancelled` is true
 * too, and the host reports a failure returned after it said so as the
 * call's `timeout` (or `cancelled` when the caller cancelled), not as the
 * tool's own failure.
 */
#define _DEFAULT_SOURCE 1 /* strnlen, DT_* and fstatat with -std=c11 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "glob.h"
#include "toolhost_kit.h"

#define READ_BUF_SIZE (64 * 1024)
#define MAX_FILES_DEFAULT 1000
#define MAX_FILES_LIMIT 10000
#define MAX_DEPTH 64              /* directory levels below the walked one */
#define MAX_DIR_ENTRIES 100000    /* entries read from one directory */
#define MAX_VISITED 1000000       /* entries read in one walk */
#define MAX_ERRORS_LISTED 100
#define PATH_CAP 4096
#define PROGRESS_EVERY ((uint64_t)1 << 20) /* bytes between two progress reports of hash_file */

static unsigned char read_buf[READ_BUF_SIZE];

/* ── argument helpers ───────────────────────────────────────────────── */

/* Every member must be one of `known` (the schema says
 * additionalProperties: false; the host checked, this is the belt). */
static bool only_known(const th_json *args, const char *const *known, th_error *err) {
    for (const th_json *m = args->u.children.first; m; m = m->next) {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++) ok = strlen(known[i]) == m->key_len && memcmp(known[i], m->key, m->key_len) == 0;
        if (!ok) {
            th_buf q;
            th_buf_init(&q);
            th_json_write_string(&q, m->key, m->key_len > 64 ? 64 : m->key_len);
            th_fail(err, "invalid_arguments", "unknown argument %s", q.failed ? "?" : q.data);
            th_buf_free(&q);
            return false;
        }
    }
    return true;
}

static bool arg_path(const th_json *args, const char **out, th_error *err) {
    const th_json *v = th_json_get(args, "path");
    if (v == NULL) return th_fail(err, "invalid_arguments", "missing argument path");
    if (!th_json_is_c_string(v) || v->u.string.len == 0)
        return th_fail(err, "invalid_arguments", "path must be a non-empty string without NUL characters");
    if (v->u.string.len >= PATH_CAP) return th_fail(err, "invalid_arguments", "path is longer than %d bytes", PATH_CAP - 1);
    *out = v->u.string.ptr;
    return true;
}

static bool arg_algorithm(const th_json *args, hash_algorithm *out, th_error *err) {
    const th_json *v = th_json_get(args, "algorithm");
    *out = HASH_SHA256;
    if (v == NULL) return true;
    if (!th_json_is_c_string(v) || !hash_algorithm_parse(v->u.string.ptr, out))
        return th_fail(err, "invalid_arguments", "algorithm must be one of \"sha256\", \"blake2s\", \"crc32\"");
    return true;
}

/* An optional non-negative integer no larger than `max`. */
static bool arg_u64(const th_json *args, const char *name, uint64_t max, uint64_t *out, bool *present, th_error *err) {
    const th_json *v = th_json_get(args, name);
    if (present) *present = v != NULL;
    if (v == NULL) return true;
    if (!th_json_u64(v, out) || *out > max)
        return th_fail(err, "invalid_arguments", "%s must be an integer from 0 to %llu", name, (unsigned long long)max);
    return true;
}

/* ── streaming a file ───────────────────────────────────────────────── */

/* Hashes up to `limit` bytes from the current position of `fd`; returns
 * the count, or -1 with errno set. Unless `total` is NULL, it reports the
 * bytes hashed of *total after each PROGRESS_EVERY bytes. Unless
 * `cancelled` is NULL, it asks whether the call was cancelled before each
 * chunk, and when it was, sets *cancelled and returns the count so far. */
static int64_t hash_fd(int fd, hasher *h, uint64_t limit, const uint64_t *total, bool *cancelled) {
    uint64_t done = 0, next_report = PROGRESS_EVERY;
    while (done < limit) {
        if (cancelled && th_cancelled()) {
            *cancelled = true;
            break;
        }
        if (total && done >= next_report) {
            next_report = done + PROGRESS_EVERY;
            th_progress(done, *total, NULL);
        }
        size_t want = limit - done < READ_BUF_SIZE ? (size_t)(limit - done) : READ_BUF_SIZE;
        ssize_t n = read(fd, read_buf, want);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        hasher_update(h, read_buf, (size_t)n);
        done += (uint64_t)n;
    }
    return (int64_t)done;
}

/* ── hash_file ──────────────────────────────────────────────────────── */

static bool hash_file_execute(const th_json *args, th_buf *out, th_error *err) {
    static const char *const known[] = {"path", "algorithm", "offset", "length", NULL};
    const char *path;
    hash_algorithm alg;
    uint64_t offset = 0, length = UINT64_MAX;
    bool has_length = false;
    const uint64_t max_int = 9007199254740991ull; /* 2^53 - 1, as the schema says */
    if (!only_known(args, known, err) || !arg_path(args, &path, err) || !arg_algorithm(args, &alg, err) ||
        !arg_u64(args, "offset", max_int, &offset, NULL, err) ||
        !arg_u64(args, "length", max_int, &length, &has_length, err))
        return false;

    char *resolved = th_resolve_path(path);
    if (resolved == NULL) return th_fail(err, "out_of_memory", "cannot resolve %s", path);
    int fd = open(resolved, O_RDONLY);
    free(resolved);
    if (fd < 0) return th_fail_errno(err, errno, "cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return th_fail_errno(err, e, "cannot stat", path);
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return th_fail(err, "is_directory", "%s is a directory (hash_tree hashes the files in a directory)", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return th_fail(err, "not_a_file", "%s is not a regular file", path);
    }
    uint64_t size = (uint64_t)st.st_size;
    if (offset > size) {
        close(fd);
        return th_fail(err, "invalid_arguments", "offset %llu is past the end of %s (%llu bytes)",
                       (unsigned long long)offset, path, (unsigned long long)size);
    }
    if (offset > 0 && lseek(fd, (off_t)offset, SEEK_SET) < 0) {
        int e = errno;
        close(fd);
        return th_fail_errno(err, e, "cannot seek in", path);
    }
    hasher h;
    hasher_init(&h, alg);
    /* The total of the progress: what is left from offset, or less. */
    uint64_t to_hash = has_length && length < size - offset ? length : size - offset;
    bool cancelled = false;
    int64_t n = hash_fd(fd, &h, has_length ? length : UINT64_MAX, &to_hash, &cancelled);
    int e = errno;
    close(fd);
    if (n < 0) return th_fail_errno(err, e, "cannot read", path);
    if (cancelled)
        return th_fail(err, "cancelled", "the call was cancelled after %lld of %llu bytes of %s", (long long)n,
                       (unsigned long long)to_hash, path);
    char hex[65];
    hasher_final_hex(&h, hex);

    th_buf_puts(out, "{\"path\":");
    th_json_write_cstr(out, path);
    th_buf_printf(out, ",\"algorithm\":\"%s\",\"digest\":\"%s\",\"bytes\":%lld,\"offset\":%llu,\"size\":%llu}",
                  hash_algorithm_name(alg), hex, (long long)n, (unsigned long long)offset, (unsigned long long)size);
    return true;
}

/* ── rendering helpers ──────────────────────────────────────────────── */

/* One `sha256sum`-style line: "<digest>  <name>", with sha256sum's
 * escaping when the name holds '\\', '\n' or '\r' (the line then starts
 * with '\\'). */
static void checksum_line(th_buf *out, const char *digest, const char *dir, const char *name) {
    bool escape = strpbrk(name, "\\\n\r") != NULL || (dir && strpbrk(dir, "\\\n\r") != NULL);
    if (escape) th_buf_putc(out, '\\');
    th_buf_puts(out, digest);
    th_buf_puts(out, "  ");
    for (int part = 0; part < 2; part++) {
        const char *s = part == 0 ? dir : name;
        if (s == NULL) continue;
        for (; *s; s++) {
            if (escape && *s == '\\') th_buf_puts(out, "\\\\");
            else if (escape && *s == '\n') th_buf_puts(out, "\\n");
            else if (escape && *s == '\r') th_buf_puts(out, "\\r");
            else th_buf_putc(out, *s);
        }
    }
    th_buf_putc(out, '\n');
}

static uint64_t get_u64(const th_json *obj, const char *key) {
    uint64_t v = 0;
    th_json_u64(th_json_get(obj, key), &v);
    return v;
}

static const char *get_str(const th_json *obj, const char *key) {
    const th_json *v = th_json_get(obj, key);
    return th_json_is_c_string(v) ? v->u.string.ptr : NULL;
}

static bool hash_file_render(const th_json *args, const th_json *value, th_content *content) {
    (void)args;
    th_buf *out = th_content_text(content);
    const char *digest = get_str(value, "digest"), *path = get_str(value, "path"), *alg = get_str(value, "algorithm");
    if (!digest || !path || !alg) return false;
    uint64_t bytes = get_u64(value, "bytes"), offset = get_u64(value, "offset"), size = get_u64(value, "size");
    checksum_line(out, digest, NULL, path);
    if (offset == 0 && bytes == size)
        th_buf_printf(out, "(%s of the whole file, %llu byte%s)", alg, (unsigned long long)bytes, bytes == 1 ? "" : "s");
    else
        th_buf_printf(out, "(%s of %llu bytes from offset %llu; the file has %llu bytes)", alg,
                      (unsigned long long)bytes, (unsigned long long)offset, (unsigned long long)size);
    return true;
}

/* ── hash_tree ──────────────────────────────────────────────────────── */

typedef struct entry {
    char *key; /* name, plus '/' for a directory: the sort key */
    size_t name_len;
    unsigned char kind; /* 'd' directory, 'f' regular file, 'o' other */
} entry;

typedef struct walk {
    hash_algorithm alg;
    const glob_pattern *glob;
    bool hidden;
    uint64_t max_files;
    th_buf *out;       /* the files array is written as the walk goes */
    th_buf errors;     /* the errors array, at most MAX_ERRORS_LISTED */
    uint64_t files, total_bytes, skipped, error_count, visited;
    bool truncated, stop, cancelled;
    char abs[PATH_CAP]; /* absolute path of the current directory / file */
    char rel[PATH_CAP]; /* path relative to the walked directory */
} walk;

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

static void add_error(walk *w, const char *rel, const char *code, const char *message) {
    w->error_count++;
    if (w->error_count > MAX_ERRORS_LISTED) return;
    if (w->error_count > 1) th_buf_putc(&w->errors, ',');
    th_buf_puts(&w->errors, "{\"path\":");
    th_json_write_cstr(&w->errors, rel);
    th_buf_puts(&w->errors, ",\"code\":");
    th_json_write_cstr(&w->errors, code);
    th_buf_puts(&w->errors, ",\"message\":");
    th_json_write_cstr(&w->errors, message);
    th_buf_putc(&w->errors, '}');
}

static void add_errno(walk *w, const char *rel, int e) {
    add_error(w, rel, th_errno_code(e), strerror(e));
}

static void hash_one(walk *w) {
    int fd = open(w->abs, O_RDONLY);
    if (fd < 0) {
        add_errno(w, w->rel, errno);
        return;
    }
    hasher h;
    hasher_init(&h, w->alg);
    int64_t n = hash_fd(fd, &h, UINT64_MAX, NULL, NULL); /* the walk checks between files */
    int e = errno;
    close(fd);
    if (n < 0) {
        add_errno(w, w->rel, e);
        return;
    }
    char hex[65];
    hasher_final_hex(&h, hex);
    if (w->files > 0) th_buf_putc(w->out, ',');
    th_buf_puts(w->out, "{\"path\":");
    th_json_write_cstr(w->out, w->rel);
    th_buf_printf(w->out, ",\"digest\":\"%s\",\"bytes\":%lld}", hex, (long long)n);
    w->files++;
    w->total_bytes += (uint64_t)n;
    th_progress(w->files, TH_TOTAL_UNKNOWN, w->rel);
}

/* Reads, sorts and closes one directory (w->abs), then visits its entries.
 * abs_len / rel_len: the current lengths of w->abs and w->rel. */
static void walk_dir(walk *w, size_t abs_len, size_t rel_len, int depth) {
    DIR *d = opendir(w->abs);
    if (d == NULL) {
        add_errno(w, rel_len ? w->rel : ".", errno);
        return;
    }
    entry *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (++w->visited > MAX_VISITED || n >= MAX_DIR_ENTRIES) {
            w->truncated = true;
            w->stop = w->visited > MAX_VISITED;
            break;
        }
        if (!w->hidden && name[0] == '.') continue;
        unsigned char kind;
        if (de->d_type == DT_DIR) kind = 'd';
        else if (de->d_type == DT_REG) kind = 'f';
        else if (de->d_type == DT_UNKNOWN) {
            struct stat st;
            kind = 'o';
            if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                kind = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'o';
        } else kind = 'o'; /* symbolic links, devices, sockets: not followed */
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            entry *nl = realloc(list, ncap * sizeof *nl);
            if (nl == NULL) {
                add_error(w, rel_len ? w->rel : ".", "out_of_memory", "too many entries to sort");
                break;
            }
            list = nl;
            cap = ncap;
        }
        size_t len = strlen(name);
        char *key = malloc(len + 2);
        if (key == NULL) {
            add_error(w, rel_len ? w->rel : ".", "out_of_memory", "too many entries to sort");
            break;
        }
        memcpy(key, name, len);
        key[len] = kind == 'd' ? '/' : '\0';
        key[len + 1] = '\0';
        list[n++] = (entry){key, len, kind};
        errno = 0;
    }
    if (de == NULL && errno != 0) add_errno(w, rel_len ? w->rel : ".", errno);
    closedir(d);
    if (n > 1) qsort(list, n, sizeof *list, cmp_entry);

    for (size_t i = 0; i < n && !w->stop; i++) {
        entry *e = &list[i];
        /* w->rel = rel + name; w->abs = abs + "/" + name */
        if (rel_len + e->name_len + 2 > PATH_CAP || abs_len + e->name_len + 2 > PATH_CAP) {
            e->key[e->name_len] = '\0';
            add_error(w, e->key, "name_too_long", "the path is too long");
            continue;
        }
        size_t rl = rel_len, al = abs_len;
        if (rl) w->rel[rl++] = '/';
        memcpy(w->rel + rl, e->key, e->name_len);
        rl += e->name_len;
        w->rel[rl] = '\0';
        if (al == 0 || w->abs[al - 1] != '/') w->abs[al++] = '/';
        memcpy(w->abs + al, e->key, e->name_len);
        al += e->name_len;
        w->abs[al] = '\0';

        if (e->kind == 'd') {
            if (depth >= MAX_DEPTH) add_error(w, w->rel, "too_deep", "more than 64 directory levels: not walked");
            else walk_dir(w, al, rl, depth + 1);
        } else if (e->kind == 'f') {
            if (w->glob == NULL || glob_match(w->glob, w->rel)) {
                if (w->files >= w->max_files) {
                    w->truncated = true;
                    w->stop = true;
                } else if (th_cancelled()) {
                    w->cancelled = w->stop = true;
                } else {
                    hash_one(w);
                }
            }
        } else if (w->glob == NULL || glob_match(w->glob, w->rel)) {
            w->skipped++; /* symbolic links and special files are not followed */
        }
        w->rel[rel_len] = '\0';
        w->abs[abs_len] = '\0';
    }
    for (size_t i = 0; i < n; i++) free(list[i].key);
    free(list);
}

static bool hash_tree_execute(const th_json *args, th_buf *out, th_error *err) {
    static const char *const known[] = {"path", "algorithm", "glob", "max_files", "hidden", NULL};
    const char *path;
    hash_algorithm alg;
    uint64_t max_files = MAX_FILES_DEFAULT;
    if (!only_known(args, known, err) || !arg_path(args, &path, err) || !arg_algorithm(args, &alg, err) ||
        !arg_u64(args, "max_files", MAX_FILES_LIMIT, &max_files, NULL, err))
        return false;
    if (max_files == 0) return th_fail(err, "invalid_arguments", "max_files must be from 1 to %d", MAX_FILES_LIMIT);
    bool hidden = false;
    const th_json *hv = th_json_get(args, "hidden");
    if (hv != NULL) {
        if (!th_json_is(hv, TH_JSON_BOOL)) return th_fail(err, "invalid_arguments", "hidden must be a boolean");
        hidden = hv->u.boolean;
    }
    glob_pattern *glob = NULL;
    const th_json *gv = th_json_get(args, "glob");
    if (gv != NULL) {
        char gerr[128];
        if (!th_json_is_c_string(gv)) return th_fail(err, "invalid_arguments", "glob must be a string");
        glob = glob_compile(gv->u.string.ptr, gerr, sizeof gerr);
        if (glob == NULL) return th_fail(err, "invalid_arguments", "invalid glob: %s", gerr);
    }

    walk *w = calloc(1, sizeof *w);
    char *resolved = th_resolve_path(path);
    if (w == NULL || resolved == NULL || strlen(resolved) >= PATH_CAP) {
        free(w);
        free(resolved);
        glob_free(glob);
        return th_fail(err, "out_of_memory", "cannot resolve %s", path);
    }
    struct stat st;
    if (stat(resolved, &st) != 0) {
        int e = errno;
        free(w);
        free(resolved);
        glob_free(glob);
        return th_fail_errno(err, e, "cannot stat", path);
    }
    if (!S_ISDIR(st.st_mode)) {
        free(w);
        free(resolved);
        glob_free(glob);
        return th_fail(err, "not_a_directory", "%s is not a directory (hash_file hashes one file)", path);
    }
    w->alg = alg;
    w->glob = glob;
    w->hidden = hidden;
    w->max_files = max_files;
    w->out = out;
    th_buf_init(&w->errors);
    size_t al = strlen(resolved);
    memcpy(w->abs, resolved, al + 1);
    free(resolved);

    th_buf_puts(out, "{\"path\":");
    th_json_write_cstr(out, path);
    th_buf_printf(out, ",\"algorithm\":\"%s\",\"files\":[", hash_algorithm_name(alg));
    walk_dir(w, al, 0, 0);
    if (w->cancelled) {
        uint64_t files = w->files;
        th_buf_free(&w->errors);
        free(w);
        glob_free(glob);
        return th_fail(err, "cancelled", "the call was cancelled after %llu files of %s", (unsigned long long)files,
                       path);
    }
    th_buf_printf(out,
                  "],\"file_count\":%llu,\"total_bytes\":%llu,\"truncated\":%s,\"skipped\":%llu,"
                  "\"error_count\":%llu,\"errors\":[",
                  (unsigned long long)w->files, (unsigned long long)w->total_bytes, w->truncated ? "true" : "false",
                  (unsigned long long)w->skipped, (unsigned long long)w->error_count);
    if (w->errors.failed) out->failed = true;
    else th_buf_append(out, w->errors.data ? w->errors.data : "", w->errors.len);
    th_buf_puts(out, "]}");
    th_buf_free(&w->errors);
    free(w);
    glob_free(glob);
    return true;
}

static bool hash_tree_render(const th_json *args, const th_json *value, th_content *content) {
    th_buf *out = th_content_text(content);
    const char *alg = get_str(value, "algorithm");
    const th_json *files = th_json_get(value, "files"), *errors = th_json_get(value, "errors");
    if (!alg || !th_json_is(files, TH_JSON_ARRAY) || !th_json_is(errors, TH_JSON_ARRAY)) return false;
    /* Lines name files as the caller would: "<path>/<relative path>", or
     * the relative path alone when the directory was "." . */
    const char *dir = get_str(args, "path");
    th_buf prefix;
    th_buf_init(&prefix);
    if (dir) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') n--;
        if (!(n == 1 && dir[0] == '.') && !(n == 2 && dir[0] == '.' && dir[1] == '/')) {
            th_buf_append(&prefix, dir, n);
            if (dir[n - 1] != '/') th_buf_putc(&prefix, '/');
        }
    }
    for (const th_json *f = files->u.children.first; f; f = f->next) {
        const char *digest = get_str(f, "digest"), *p = get_str(f, "path");
        if (digest && p) checksum_line(out, digest, prefix.len ? prefix.data : NULL, p);
    }
    th_buf_free(&prefix);
    uint64_t count = get_u64(value, "file_count"), total = get_u64(value, "total_bytes");
    uint64_t skipped = get_u64(value, "skipped"), nerr = get_u64(value, "error_count");
    th_buf_printf(out, "(%s: %llu file%s, %llu bytes", alg, (unsigned long long)count, count == 1 ? "" : "s",
                  (unsigned long long)total);
    if (skipped)
        th_buf_printf(out, "; %llu symbolic link%s or special file%s skipped", (unsigned long long)skipped,
                      skipped == 1 ? "" : "s", skipped == 1 ? "" : "s");
    th_buf_puts(out, ")");
    const th_json *tr = th_json_get(value, "truncated");
    if (th_json_is(tr, TH_JSON_BOOL) && tr->u.boolean)
        th_buf_puts(out, "\ntruncated: more files match; raise max_files (at most 10000), narrow the glob or hash a subdirectory");
    for (const th_json *e = errors->u.children.first; e; e = e->next) {
        const char *p = get_str(e, "path"), *code = get_str(e, "code"), *msg = get_str(e, "message");
        if (p && code && msg) th_buf_printf(out, "\nerror [%s] %s: %s", code, p, msg);
    }
    if (nerr > MAX_ERRORS_LISTED) th_buf_printf(out, "\n(%llu errors in all)", (unsigned long long)nerr);
    return true;
}

/* ── descriptors ────────────────────────────────────────────────────── */

#define ALGORITHM_SCHEMA                                                                             \
    "{\"type\":\"string\",\"enum\":[\"sha256\",\"blake2s\",\"crc32\"],\"default\":\"sha256\","        \
    "\"description\":\"sha256 (FIPS 180-4, as sha256sum), blake2s (BLAKE2s-256, RFC 7693) or crc32 "  \
    "(IEEE, as zlib, gzip and PNG; 8 hex digits).\"}"

static const th_path_param FILE_PATHS[] = {{"/path", TH_ACCESS_READ}};
static const th_path_param TREE_PATHS[] = {{"/path", TH_ACCESS_LIST}};

static const th_tool HASH_FILE = {
    .name = "hash_file",
    .title = "Hash a file",
    .description =
        "Computes the checksum of a file (or of a byte range of it): sha256 (default), blake2s or crc32. "
        "Streams the file; any size works. Use it to verify downloads, compare files or detect changes "
        "without reading the content.",
    .input_schema =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"properties\":{"
        "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,\"description\":\"The file, relative to "
        "the working directory (e.g. /workspace) or absolute.\"},"
        "\"algorithm\":" ALGORITHM_SCHEMA ","
        "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991,\"default\":0,"
        "\"description\":\"First byte to hash.\"},"
        "\"length\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991,"
        "\"description\":\"How many bytes to hash from offset (default: to the end of the file).\"}},"
        "\"required\":[\"path\"],\"additionalProperties\":false}",
    .output_schema =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"properties\":{"
        "\"path\":{\"type\":\"string\",\"description\":\"The path as given.\"},"
        "\"algorithm\":{\"type\":\"string\",\"enum\":[\"sha256\",\"blake2s\",\"crc32\"]},"
        "\"digest\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]+$\",\"description\":\"Lowercase hex.\"},"
        "\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Bytes hashed.\"},"
        "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
        "\"size\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The file's size.\"}},"
        "\"required\":[\"path\",\"algorithm\",\"digest\",\"bytes\",\"offset\",\"size\"],"
        "\"additionalProperties\":false}",
    .annotations = {.read_only = true, .idempotent = true},
    .paths = FILE_PATHS,
    .n_paths = 1,
    .execute = hash_file_execute,
    .render = hash_file_render,
};

static const th_tool HASH_TREE = {
    .name = "hash_tree",
    .title = "Hash the files in a directory",
    .description =
        "Computes the checksum of every regular file under a directory (recursively), sorted by path: "
        "sha256 (default), blake2s or crc32. Optional glob (`*.c` matches names at any depth, `src/**/*.h` "
        "whole relative paths); hidden files and directories (.name) are skipped unless hidden is true; "
        "symbolic links are not followed. Returns at most max_files files (default 1000) and says when "
        "more matched.",
    .input_schema =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"properties\":{"
        "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4095,\"description\":\"The directory, "
        "relative to the working directory (e.g. /workspace; \\\".\\\" for it) or absolute.\"},"
        "\"algorithm\":" ALGORITHM_SCHEMA ","
        "\"glob\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256,\"description\":\"Only files matching "
        "it: * ? [a-z] within a name, ** across directories. Without '/' it matches file names at any depth, "
        "with '/' paths relative to the directory.\"},"
        "\"max_files\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"default\":1000,"
        "\"description\":\"Stop after this many files (in path order).\"},"
        "\"hidden\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Include files and directories "
        "whose name starts with '.'.\"}},"
        "\"required\":[\"path\"],\"additionalProperties\":false}",
    .output_schema =
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
        "\"properties\":{"
        "\"path\":{\"type\":\"string\"},"
        "\"algorithm\":{\"type\":\"string\",\"enum\":[\"sha256\",\"blake2s\",\"crc32\"]},"
        "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\",\"description\":\"Relative to the directory.\"},"
        "\"digest\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]+$\"},"
        "\"bytes\":{\"type\":\"integer\",\"minimum\":0}},"
        "\"required\":[\"path\",\"digest\",\"bytes\"],\"additionalProperties\":false}},"
        "\"file_count\":{\"type\":\"integer\",\"minimum\":0},"
        "\"total_bytes\":{\"type\":\"integer\",\"minimum\":0},"
        "\"truncated\":{\"type\":\"boolean\",\"description\":\"More files matched than were hashed.\"},"
        "\"skipped\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Symbolic links and special files "
        "not hashed.\"},"
        "\"error_count\":{\"type\":\"integer\",\"minimum\":0},"
        "\"errors\":{\"type\":\"array\",\"maxItems\":100,\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\"},\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}},"
        "\"required\":[\"path\",\"code\",\"message\"],\"additionalProperties\":false}}},"
        "\"required\":[\"path\",\"algorithm\",\"files\",\"file_count\",\"total_bytes\",\"truncated\",\"skipped\","
        "\"error_count\",\"errors\"],\"additionalProperties\":false}",
    .annotations = {.read_only = true, .idempotent = true},
    .paths = TREE_PATHS,
    .n_paths = 1,
    .execute = hash_tree_execute,
    .render = hash_tree_render,
};

TH_TOOLSET(&HASH_FILE, &HASH_TREE);
