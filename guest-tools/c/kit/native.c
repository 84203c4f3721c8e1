/* toolhost_kit, native side (tests): the initial working directory is the
 * process's. Not linked into a component (kit/component.c is). */
#define _DEFAULT_SOURCE 1 /* strnlen, DT_* and fstatat with -std=c11 */
#include <stdlib.h>
#include <unistd.h>

#include "toolhost_kit.h"

char *th_platform_initial_cwd(void) { return getcwd(NULL, 0); }
