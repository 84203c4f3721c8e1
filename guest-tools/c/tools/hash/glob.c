/* Glob patterns: see glob.h. */
#define _DEFAULT_SOURCE 1 /* strnlen, DT_* and fstatat with -std=c11 */
#include "glob.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th_json.h" /* th_utf8_seq */

typedef enum tok_kind { T_LIT, T_ANY, T_CLASS, T_STAR, T_GLOBSTAR, T_GLOBSTAR_SLASH } tok_kind;

typedef struct range {
    uint32_t lo, hi;
} range;

typedef struct token {
    tok_kind kind;
    uint32_t cp;          /* T_LIT */
    bool negated;         /* T_CLASS */
    size_t first, count;  /* T_CLASS: ranges[first .. first+count) */
} token;

struct glob_pattern {
    bool basename_only;
    size_t n;
    token tok[GLOB_MAX_PATTERN + 1];
    range ranges[GLOB_MAX_PATTERN];
    size_t n_ranges;
};

/* Decodes one code point; invalid bytes decode as 0xFFFFFFFF (matching no
 * literal and no positive class). */
static uint32_t next_cp(const unsigned char **s) {
    const unsigned char *p = *s;
    size_t avail = strnlen((const char *)p, 4);
    size_t k = th_utf8_seq(p, avail);
    uint32_t cp;
    if (k == 0) {
        *s = p + 1;
        return 0xFFFFFFFFu;
    }
    if (k == 1) cp = p[0];
    else if (k == 2) cp = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    else if (k == 3) cp = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    else cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 | (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    *s = p + k;
    return cp;
}

static glob_pattern *bad(glob_pattern *g, char *error, size_t cap, const char *msg) {
    if (error && cap) snprintf(error, cap, "%s", msg);
    free(g);
    return NULL;
}

glob_pattern *glob_compile(const char *pattern, char *error, size_t cap) {
    size_t len = strlen(pattern);
    if (len == 0) return bad(NULL, error, cap, "the pattern is empty");
    if (len > GLOB_MAX_PATTERN) return bad(NULL, error, cap, "the pattern is longer than 256 bytes");
    const unsigned char *u = (const unsigned char *)pattern;
    for (size_t i = 0; i < len;) {
        size_t k = th_utf8_seq(u + i, len - i);
        if (k == 0) return bad(NULL, error, cap, "the pattern is not valid UTF-8");
        i += k;
    }
    glob_pattern *g = calloc(1, sizeof *g);
    if (g == NULL) return bad(NULL, error, cap, "out of memory");
    g->basename_only = strchr(pattern, '/') == NULL;
    const unsigned char *s = u;
    while (*s) {
        token *t = &g->tok[g->n];
        memset(t, 0, sizeof *t);
        if (s[0] == '*' && s[1] == '*') {
            bool at_segment_start = s == u || s[-1] == '/';
            s += 2;
            while (*s == '*') s++; /* "***" is "**" */
            if (at_segment_start && *s == '/') {
                s++;
                t->kind = T_GLOBSTAR_SLASH;
            } else {
                t->kind = T_GLOBSTAR;
            }
        } else if (*s == '*') {
            s++;
            t->kind = T_STAR;
        } else if (*s == '?') {
            s++;
            t->kind = T_ANY;
        } else if (*s == '[') {
            s++;
            t->kind = T_CLASS;
            if (*s == '!' || *s == '^') {
                t->negated = true;
                s++;
            }
            t->first = g->n_ranges;
            bool first = true;
            while (*s && (*s != ']' || first)) {
                first = false;
                if (*s == '\\') {
                    s++;
                    if (!*s) return bad(g, error, cap, "the pattern ends with '\\'");
                }
                uint32_t lo = next_cp(&s), hi = lo;
                if (s[0] == '-' && s[1] && s[1] != ']') {
                    s++;
                    if (*s == '\\') {
                        s++;
                        if (!*s) return bad(g, error, cap, "the pattern ends with '\\'");
                    }
                    hi = next_cp(&s);
                    if (hi < lo) return bad(g, error, cap, "a range in [...] is reversed");
                }
                if (g->n_ranges >= GLOB_MAX_PATTERN) return bad(g, error, cap, "too many ranges");
                g->ranges[g->n_ranges++] = (range){lo, hi};
            }
            if (*s != ']') return bad(g, error, cap, "'[' without a closing ']'");
            s++;
            t->count = g->n_ranges - t->first;
        } else {
            if (*s == '\\') {
                s++;
                if (!*s) return bad(g, error, cap, "the pattern ends with '\\'");
            }
            t->kind = T_LIT;
            t->cp = next_cp(&s);
        }
        g->n++;
    }
    return g;
}

void glob_free(glob_pattern *g) { free(g); }

static bool class_has(const glob_pattern *g, const token *t, uint32_t cp) {
    bool in = false;
    for (size_t i = 0; i < t->count && !in; i++) {
        const range *r = &g->ranges[t->first + i];
        in = cp >= r->lo && cp <= r->hi;
    }
    return in != t->negated;
}

/* Adds state i and everything reachable from it without input. */
static void close_state(const glob_pattern *g, bool *set, size_t i) {
    while (i <= g->n && !set[i]) {
        set[i] = true;
        if (i == g->n) return;
        tok_kind k = g->tok[i].kind;
        if (k != T_STAR && k != T_GLOBSTAR && k != T_GLOBSTAR_SLASH) return;
        i++; /* these may match nothing */
    }
}

bool glob_match(const glob_pattern *g, const char *path) {
    if (g->basename_only) {
        const char *slash = strrchr(path, '/');
        if (slash) path = slash + 1;
    }
    bool cur[GLOB_MAX_PATTERN + 2], nxt[GLOB_MAX_PATTERN + 2];
    memset(cur, 0, sizeof cur);
    close_state(g, cur, 0);
    const unsigned char *s = (const unsigned char *)path;
    while (*s) {
        uint32_t cp = next_cp(&s);
        memset(nxt, 0, sizeof nxt);
        bool any = false;
        for (size_t i = 0; i < g->n; i++) {
            if (!cur[i]) continue;
            const token *t = &g->tok[i];
            switch (t->kind) {
            case T_LIT:
                if (cp == t->cp) close_state(g, nxt, i + 1), any = true;
                break;
            case T_ANY:
                if (cp != '/') close_state(g, nxt, i + 1), any = true;
                break;
            case T_CLASS:
                if (cp != '/' && class_has(g, t, cp)) close_state(g, nxt, i + 1), any = true;
                break;
            case T_STAR:
                if (cp != '/') close_state(g, nxt, i), any = true;
                break;
            case T_GLOBSTAR:
                close_state(g, nxt, i), any = true;
                break;
            case T_GLOBSTAR_SLASH:
                close_state(g, nxt, i), any = true;
                if (cp == '/') close_state(g, nxt, i + 1);
                break;
            }
        }
        if (!any) return false;
        memcpy(cur, nxt, sizeof cur);
    }
    return cur[g->n];
}
