/* Editing a text in the user's editor. */
#include "config.h"

#include "edit_external.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The editor command: $VISUAL, else $EDITOR, else vi (a set but empty variable counts as unset). */
static const char *editor_command(void)
{
    const char *names[] = {"VISUAL", "EDITOR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *e = getenv(names[i]);
        if (e && e[strspn(e, " \t")])
            return e;
    }
    return "vi";
}

/* Writes text to a new temporary file, its name into path, with a newline after a last line
 * that has none. False with why set on failure. */
static bool write_temp(const char *text, char *path, size_t path_size, char *why, size_t size)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, path_size, "%s/dllm-message-XXXXXX.md", dir && dir[0] == '/' ? dir : "/tmp");
    const int fd = mkstemps(path, 3);
    if (fd < 0) {
        snprintf(why, size, "cannot make a temporary file for the editor (%s): %s", path,
                 strerror(errno));
        return false;
    }
    FILE *f = fdopen(fd, "w");
    const size_t len = strlen(text);
    const bool newline = len > 0 && text[len - 1] != '\n'; /* a last line as editors keep it */
    bool ok = f && fputs(text, f) >= 0 && (!newline || fputc('\n', f) != EOF) && fflush(f) == 0;
    int e = errno;
    if ((f ? fclose(f) : close(fd)) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        snprintf(why, size, "cannot write the temporary file %s: %s", path, strerror(e));
        unlink(path);
    }
    return ok;
}

/* Runs "EDITOR path" through /bin/sh and waits for it; SIGINT and SIGQUIT reach it alone.
 * Returns its wait status, or -1 with errno set when it could not be started or waited for. */
static int run_editor(const char *editor, const char *path)
{
    char *cmd = malloc(strlen(editor) + sizeof " \"$1\"");
    if (!cmd)
        return -1;
    sprintf(cmd, "%s \"$1\"", editor);
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    const pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        execl("/bin/sh", "sh", "-c", cmd, "sh", path, (char *)NULL);
        _exit(127);
    }
    int status = -1, e = errno; /* fork's, where it failed */
    if (pid > 0) {
        int rc;
        while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
            ;
        e = errno;
        status = rc < 0 ? -1 : status;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    free(cmd);
    errno = e;
    return status;
}

/* The file's text, less one final newline, or NULL with why set. */
static char *read_back(const char *path, char *why, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, size, "cannot read the editor's file %s back: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    if (fstat(fileno(f), &st) != 0) {
        snprintf(why, size, "cannot read the editor's file %s back: %s", path, strerror(errno));
    } else if (!(text = malloc((size_t)st.st_size + 1))) {
        snprintf(why, size, "out of memory for the editor's text (%lld bytes)",
                 (long long)st.st_size);
    } else if ((len = fread(text, 1, (size_t)st.st_size, f)) < (size_t)st.st_size && ferror(f)) {
        snprintf(why, size, "cannot read the editor's file %s back: %s", path, strerror(errno));
        free(text);
        text = NULL;
    }
    fclose(f);
    if (!text)
        return NULL;
    if (len > 0 && text[len - 1] == '\n')
        len--;
    text[len] = '\0';
    return text;
}

char *edit_external(const char *text, char *why, size_t size)
{
    const char *editor = editor_command();
    char path[4096];
    if (!write_temp(text, path, sizeof path, why, size))
        return NULL;
    const int status = run_editor(editor, path);
    char *edited = NULL;
    if (status < 0)
        snprintf(why, size, "cannot run the editor '%s': %s", editor, strerror(errno));
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(why, size, "cannot run the editor '%s': set VISUAL or EDITOR to one", editor);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(why, size, "the editor '%s' failed (%s %d): the input is as it was", editor,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    else
        edited = read_back(path, why, size);
    unlink(path);
    return edited;
}
