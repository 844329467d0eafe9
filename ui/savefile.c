/* Replacing a file whole through a temporary file and rename. */
#include "config.h"

#include "savefile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool ui_save_file(const char *path, ui_save_fn write, const void *ctx)
{
    const size_t n = strlen(path) + sizeof ".XXXXXX";
    char *tmp = malloc(n);
    if (!tmp)
        return false;
    snprintf(tmp, n, "%s.XXXXXX", path);
    int fd = mkstemp(tmp); /* mode 0600: a conversation stays the user's */
    if (fd < 0) {
        free(tmp);
        return false;
    }
    FILE *f = fdopen(fd, "w");
    if (!f)
        close(fd);
    bool ok = f && write(f, ctx) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (f && fclose(f) != 0 && ok) {
        saved = errno;
        ok = false;
    }
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok)
        unlink(tmp);
    free(tmp);
    errno = saved;
    return ok;
}
