/* th_json: see th_json.h. */
#include "th_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TH_JSON_DEFAULT_MAX_INPUT ((size_t)8 << 20)
#define TH_JSON_DEFAULT_MAX_DEPTH 64
#define TH_JSON_HARD_MAX_DEPTH 512 /* recursion bound whatever the caller asks */
#define TH_JSON_DEFAULT_MAX_NODES 1000000

/* ── arena ──────────────────────────────────────────────────────────── */

typedef struct arena_block {
    struct arena_block *prev;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char data[];
} arena_block;

struct th_json_doc {
    arena_block *blocks;
    th_json *root;
};

static void *arena_alloc(th_json_doc *doc, size_t size) {
    const size_t align = _Alignof(max_align_t);
    if (size > SIZE_MAX - align) return NULL;
    size = (size + align - 1) & ~(align - 1);
    arena_block *b = doc->blocks;
    if (b == NULL || b->cap - b->used < size) {
        size_t cap = b ? b->cap * 2 : 4096;
        if (cap > ((size_t)1 << 20)) cap = (size_t)1 << 20;
        if (cap < size) cap = size;
        if (cap > SIZE_MAX - sizeof(arena_block)) return NULL;
        arena_block *nb = malloc(sizeof(arena_block) + cap);
        if (nb == NULL) return NULL;
        nb->prev = b;
        nb->used = 0;
        nb->cap = cap;
        doc->blocks = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

void th_json_free(th_json_doc *doc) {
    if (doc == NULL) return;
    arena_block *b = doc->blocks;
    while (b) {
        arena_block *prev = b->prev;
        free(b);
        b = prev;
    }
    free(doc);
}

/* ── parser state ───────────────────────────────────────────────────── */

typedef struct parser {
    const unsigned char *s;
    size_t len, pos;
    size_t depth, max_depth;
    size_t nodes, max_nodes;
    th_json_doc *doc;
    char *error;
    size_t error_cap;
    bool failed;
} parser;

static bool fail(parser *p, const char *fmt, ...) {
    if (p->failed) return false;
    p->failed = true;
    if (p->error && p->error_cap) {
        int n = snprintf(p->error, p->error_cap, "offset %zu: ", p->pos);
        if (n >= 0 && (size_t)n < p->error_cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->error + n, p->error_cap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return false;
}

static void skip_ws(parser *p) {
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static th_json *new_node(parser *p, th_json_type type) {
    if (p->nodes >= p->max_nodes) {
        fail(p, "more than %zu values", p->max_nodes);
        return NULL;
    }
    th_json *n = arena_alloc(p->doc, sizeof(th_json));
    if (n == NULL) {
        fail(p, "out of memory");
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->type = type;
    p->nodes++;
    return n;
}

static bool parse_value(parser *p, th_json **out);

static bool literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return fail(p, "invalid literal");
    p->pos += n;
    return true;
}

static int hex4(const unsigned char *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s[i];
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s[0..avail), or 0 if invalid
 * (overlong, surrogate, above U+10FFFF, truncated). */
size_t th_utf8_seq(const unsigned char *s, size_t avail) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        return (avail >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (avail < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && s[1] > 0x9F) return 0; /* surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (avail < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && s[1] > 0x8F) return 0; /* > U+10FFFF */
        return 4;
    }
    return 0;
}

/* Parses a string starting at the opening quote; the decoded bytes go into
 * the arena (never longer than the source). */
static bool parse_string(parser *p, const char **out, size_t *out_len) {
    p->pos++; /* opening quote */
    /* Find the closing quote first to size the buffer. */
    size_t start = p->pos, end = start;
    while (end < p->len && p->s[end] != '"') {
        if (p->s[end] == '\\') end++; /* the escaped character is never the closing quote */
        end++;
    }
    if (end >= p->len) {
        p->pos = p->len;
        return fail(p, "unterminated string");
    }
    unsigned char *buf = arena_alloc(p->doc, end - start + 1);
    if (buf == NULL) return fail(p, "out of memory");
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = p->s[p->pos];
        if (c < 0x20) return fail(p, "control character U+%04X in string", c);
        if (c == '\\') {
            unsigned char e = p->s[p->pos + 1]; /* pos + 1 < end: see the scan above */
            p->pos += 2;
            switch (e) {
            case '"': buf[n++] = '"'; break;
            case '\\': buf[n++] = '\\'; break;
            case '/': buf[n++] = '/'; break;
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                p->pos -= 2;
                if (end - p->pos < 6) return fail(p, "truncated \\u escape");
                int hi = hex4(p->s + p->pos + 2);
                if (hi < 0) return fail(p, "invalid \\u escape");
                p->pos += 6;
                uint32_t cp = (uint32_t)hi;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                        return fail(p, "unpaired high surrogate");
                    int lo = hex4(p->s + p->pos + 2);
                    if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "unpaired high surrogate");
                    p->pos += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return fail(p, "unpaired low surrogate");
                }
                /* A \u escape is 6 source bytes (12 for a pair) and decodes
                 * to at most 3 (4): the buffer is large enough. */
                n += put_utf8(buf + n, cp);
                break;
            }
            default:
                p->pos -= 2;
                return fail(p, "invalid escape");
            }
            continue;
        }
        size_t k = th_utf8_seq(p->s + p->pos, end - p->pos);
        if (k == 0) return fail(p, "invalid UTF-8 in string");
        memcpy(buf + n, p->s + p->pos, k);
        n += k;
        p->pos += k;
    }
    p->pos = end + 1; /* closing quote */
    buf[n] = '\0';
    *out = (const char *)buf;
    *out_len = n;
    return true;
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static bool parse_number(parser *p, th_json *node) {
    size_t start = p->pos;
    if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
    if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "invalid number");
    if (p->s[p->pos] == '0') {
        p->pos++;
        if (p->pos < p->len && is_digit(p->s[p->pos])) return fail(p, "leading zero in number");
    } else {
        while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
    }
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "digit expected after '.'");
        while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "digit expected in exponent");
        while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
    }
    size_t n = p->pos - start;
    char *text = arena_alloc(p->doc, n + 1);
    if (text == NULL) return fail(p, "out of memory");
    memcpy(text, p->s + start, n);
    text[n] = '\0';
    node->u.number.text = text;
    node->u.number.text_len = n;
    node->u.number.value = strtod(text, NULL); /* the grammar above is a subset of strtod's */
    return true;
}

static int cmp_key(const void *a, const void *b) {
    const th_json *x = *(const th_json *const *)a, *y = *(const th_json *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static bool same_key(const th_json *x, const th_json *y) {
    return x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0;
}

/* Duplicate keys: a linear scan for small objects, sort-and-compare for
 * large ones (O(n log n), never O(n^2)). */
static bool check_duplicates(parser *p, th_json *obj) {
    size_t n = obj->u.children.len;
    if (n < 2) return true;
    if (n <= 16) {
        for (const th_json *a = obj->u.children.first; a; a = a->next)
            for (const th_json *b = a->next; b; b = b->next)
                if (same_key(a, b)) return fail(p, "duplicate key \"%.*s\"", (int)(a->key_len > 64 ? 64 : a->key_len), a->key);
        return true;
    }
    const th_json **v = malloc(n * sizeof *v);
    if (v == NULL) return fail(p, "out of memory");
    size_t i = 0;
    for (const th_json *a = obj->u.children.first; a; a = a->next) v[i++] = a;
    qsort(v, n, sizeof *v, cmp_key);
    bool ok = true;
    for (i = 1; i < n && ok; i++)
        if (same_key(v[i - 1], v[i])) ok = fail(p, "duplicate key \"%.*s\"", (int)(v[i]->key_len > 64 ? 64 : v[i]->key_len), v[i]->key);
    free(v);
    return ok;
}

static bool parse_container(parser *p, th_json *node, bool object) {
    if (++p->depth > p->max_depth) return fail(p, "nesting deeper than %zu", p->max_depth);
    p->pos++; /* '[' or '{' */
    th_json **tail = &node->u.children.first;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
        p->pos++;
        p->depth--;
        return true;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        skip_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "object key (a string) expected");
            if (!parse_string(p, &key, &key_len)) return false;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') return fail(p, "':' expected after object key");
            p->pos++;
        }
        th_json *child = NULL;
        if (!parse_value(p, &child)) return false;
        child->key = key;
        child->key_len = key_len;
        *tail = child;
        tail = &child->next;
        node->u.children.len++;
        skip_ws(p);
        if (p->pos >= p->len) return fail(p, "unterminated %s", object ? "object" : "array");
        unsigned char c = p->s[p->pos];
        if (c == ',') {
            p->pos++;
            continue;
        }
        if (c == (object ? '}' : ']')) {
            p->pos++;
            break;
        }
        return fail(p, "',' or '%c' expected", object ? '}' : ']');
    }
    p->depth--;
    return object ? check_duplicates(p, node) : true;
}

static bool parse_value(parser *p, th_json **out) {
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, "value expected");
    unsigned char c = p->s[p->pos];
    th_json *node;
    switch (c) {
    case 'n':
        if (!(node = new_node(p, TH_JSON_NULL)) || !literal(p, "null")) return false;
        break;
    case 't':
        if (!(node = new_node(p, TH_JSON_BOOL)) || !literal(p, "true")) return false;
        node->u.boolean = true;
        break;
    case 'f':
        if (!(node = new_node(p, TH_JSON_BOOL)) || !literal(p, "false")) return false;
        break;
    case '"':
        if (!(node = new_node(p, TH_JSON_STRING))) return false;
        if (!parse_string(p, &node->u.string.ptr, &node->u.string.len)) return false;
        break;
    case '[':
    case '{':
        if (!(node = new_node(p, c == '[' ? TH_JSON_ARRAY : TH_JSON_OBJECT))) return false;
        if (!parse_container(p, node, c == '{')) return false;
        break;
    default:
        if (c != '-' && !is_digit(c)) {
            if (c > 0x20 && c < 0x7F) return fail(p, "unexpected character '%c'", c);
            return fail(p, "unexpected byte 0x%02X", c);
        }
        if (!(node = new_node(p, TH_JSON_NUMBER)) || !parse_number(p, node)) return false;
        break;
    }
    *out = node;
    return true;
}

th_json_doc *th_json_parse(const char *text, size_t len, const th_json_limits *limits,
                           const th_json **root, char *error, size_t error_cap) {
    if (error && error_cap) error[0] = '\0';
    if (root) *root = NULL;
    size_t max_input = limits && limits->max_input_bytes ? limits->max_input_bytes : TH_JSON_DEFAULT_MAX_INPUT;
    size_t max_depth = limits && limits->max_depth ? limits->max_depth : TH_JSON_DEFAULT_MAX_DEPTH;
    size_t max_nodes = limits && limits->max_nodes ? limits->max_nodes : TH_JSON_DEFAULT_MAX_NODES;
    if (max_depth > TH_JSON_HARD_MAX_DEPTH) max_depth = TH_JSON_HARD_MAX_DEPTH;
    if (text == NULL && len) {
        if (error && error_cap) snprintf(error, error_cap, "no input");
        return NULL;
    }
    if (len > max_input) {
        if (error && error_cap) snprintf(error, error_cap, "input of %zu bytes exceeds the limit of %zu", len, max_input);
        return NULL;
    }
    th_json_doc *doc = calloc(1, sizeof *doc);
    if (doc == NULL) {
        if (error && error_cap) snprintf(error, error_cap, "out of memory");
        return NULL;
    }
    parser p = {
        .s = (const unsigned char *)(text ? text : ""),
        .len = len,
        .max_depth = max_depth,
        .max_nodes = max_nodes,
        .doc = doc,
        .error = error,
        .error_cap = error_cap,
    };
    th_json *value = NULL;
    bool ok = parse_value(&p, &value);
    if (ok) {
        skip_ws(&p);
        if (p.pos != p.len) ok = fail(&p, "unexpected data after the JSON value");
    }
    if (!ok) {
        th_json_free(doc);
        return NULL;
    }
    doc->root = value;
    if (root) *root = value;
    return doc;
}

/* ── accessors ──────────────────────────────────────────────────────── */

bool th_json_is(const th_json *v, th_json_type type) { return v != NULL && v->type == type; }

const th_json *th_json_get(const th_json *object, const char *key) {
    if (!th_json_is(object, TH_JSON_OBJECT) || key == NULL) return NULL;
    size_t n = strlen(key);
    for (const th_json *m = object->u.children.first; m; m = m->next)
        if (m->key_len == n && memcmp(m->key, key, n) == 0) return m;
    return NULL;
}

const char *th_json_string(const th_json *v, size_t *len) {
    if (!th_json_is(v, TH_JSON_STRING)) return NULL;
    if (len) *len = v->u.string.len;
    return v->u.string.ptr;
}

bool th_json_is_c_string(const th_json *v) {
    return th_json_is(v, TH_JSON_STRING) && memchr(v->u.string.ptr, '\0', v->u.string.len) == NULL;
}

bool th_json_u64(const th_json *v, uint64_t *out) {
    if (!th_json_is(v, TH_JSON_NUMBER)) return false;
    const char *t = v->u.number.text;
    size_t n = v->u.number.text_len;
    if (strcspn(t, "-.eE") == n) { /* plain digits: exact */
        uint64_t x = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned d = (unsigned)(t[i] - '0');
            if (x > (UINT64_MAX - d) / 10) return false;
            x = x * 10 + d;
        }
        *out = x;
        return true;
    }
    double d = v->u.number.value;
    if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || floor(d) != d) return false;
    *out = (uint64_t)d;
    return true;
}
