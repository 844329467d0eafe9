/*
 * Editing a text in the user's own editor ($VISUAL, else $EDITOR, else vi), as shells and git
 * do: for dllm-tui's input box (Ctrl+O).
 */
#ifndef DLLM_EDIT_EXTERNAL_H
#define DLLM_EDIT_EXTERNAL_H

#include <stddef.h>

/*
 * Writes text to a new temporary file (its last line ended by a newline, as editors keep a
 * file), runs the editor on it in the foreground through /bin/sh (so that an editor with
 * arguments, "code --wait", works), and reads the file back, less one final newline. The
 * caller hands the terminal over first. While the editor runs, SIGINT and SIGQUIT are the
 * editor's alone. Returns the new text (malloc'd), or NULL with why (size bytes) naming what
 * failed and the fix: the editor could not be run or exited with a failure, or the temporary
 * file could not be written or read. The file is removed.
 */
char *edit_external(const char *text, char *why, size_t size);

#endif
