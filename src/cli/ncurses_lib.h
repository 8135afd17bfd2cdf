/* ncurses, loaded when the terminal view starts (ncurses_lib.c). */
#ifndef HBM_CLI_NCURSES_LIB_H
#define HBM_CLI_NCURSES_LIB_H

/* Loads the library once: NULL when its entry points are there, else why not. */
const char *watch_curses_load(void);

#endif
