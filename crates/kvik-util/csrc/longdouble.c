/*
 * C `long double` arithmetic for the few commands whose Redis behaviour is
 * defined by it: INCRBYFLOAT, HINCRBYFLOAT and blocking-command timeouts.
 * Parsing and printing go through the C library (strtold, snprintf) so the
 * results are bit-for-bit those of a Redis built for the same platform.
 *
 * Values cross the FFI boundary as opaque 16-byte, 16-aligned slots owned
 * by the Rust side.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(long double) <= 16, "long double must fit the Rust slot");

/* Inputs this long or longer are refused, like Redis's parse buffer. */
#define KVIK_LD_MAX_CHARS 5120

/* Output styles understood by kvik_ld_format. */
enum {
    KVIK_LD_AUTO = 0,  /* "%.17Lg" */
    KVIK_LD_HUMAN = 1, /* "%.17Lf", trailing fraction zeros trimmed */
};

/*
 * Parses all of `s[0..len)` as a long double. Refuses empty or over-long
 * input, leading white space, trailing garbage (an embedded NUL included),
 * overflow, underflow to zero and NaN. Infinity spelled out is accepted.
 */
int kvik_ld_parse(const char *s, size_t len, long double *out) {
    char buf[KVIK_LD_MAX_CHARS];
    char *end;
    long double v;

    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;

    errno = 0;
    v = strtold(buf, &end);
    if ((size_t)(end - buf) != len) return 0;
    if (errno == ERANGE && (isinf(v) || v == 0)) return 0;
    if (errno == EINVAL || isnan(v)) return 0;
    *out = v;
    return 1;
}

void kvik_ld_from_f64(double d, long double *out) { *out = d; }

void kvik_ld_from_i64(long long v, long double *out) { *out = v; }

double kvik_ld_to_f64(const long double *v) { return (double)*v; }

void kvik_ld_add(const long double *a, const long double *b, long double *out) {
    *out = *a + *b;
}

int kvik_ld_is_finite(const long double *v) { return isfinite(*v) != 0; }

/*
 * Writes `*v` into buf (capacity `cap`, at least KVIK_LD_MAX_CHARS) in the
 * given style and returns the length, or 0 if the style is unknown.
 * Infinities print as "inf"/"-inf" whatever the style; in the human style a
 * negative zero prints as "0".
 */
size_t kvik_ld_format(const long double *v, int style, char *buf, size_t cap) {
    int n;

    if (isinf(*v)) {
        const char *text = *v > 0 ? "inf" : "-inf";
        n = (int)strlen(text);
        memcpy(buf, text, (size_t)n);
        return (size_t)n;
    }
    switch (style) {
    case KVIK_LD_AUTO:
        n = snprintf(buf, cap, "%.17Lg", *v);
        break;
    case KVIK_LD_HUMAN:
        n = snprintf(buf, cap, "%.17Lf", *v);
        if (n > 0 && (size_t)n < cap && memchr(buf, '.', (size_t)n) != NULL) {
            while (buf[n - 1] == '0') n--;
            if (buf[n - 1] == '.') n--;
        }
        if (n == 2 && buf[0] == '-' && buf[1] == '0') {
            buf[0] = '0';
            n = 1;
        }
        break;
    default:
        return 0;
    }
    if (n < 0 || (size_t)n >= cap) return 0;
    return (size_t)n;
}

/*
 * Seconds to whole milliseconds as Redis 7.0 computes a blocking timeout:
 * `(long long)ceill(v * 1000.0)` on x86-64, where a value outside the long
 * long range (or NaN) converts to LLONG_MIN, the hardware's "integer
 * indefinite". Spelled out so the result neither depends on undefined
 * behaviour nor needs libm.
 */
long long kvik_ld_seconds_to_ms(const long double *v) {
    long double ms = *v * 1000.0;
    long long whole;

    if (!(ms > -9223372036854775809.0L && ms < 9223372036854775808.0L)) return LLONG_MIN;
    whole = (long long)ms; /* truncates: already the ceiling unless ms > whole */
    if ((long double)whole < ms) {
        if (whole == LLONG_MAX) return LLONG_MIN;
        whole++;
    }
    return whole;
}
