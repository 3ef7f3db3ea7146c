/* The memory a program maps itself, counted with its blocks: see
 * mapped.c. */
#ifndef MPROF_MAPPED_H
#define MPROF_MAPPED_H

/* fork(2) must not copy the regions' lock while another thread holds it. */
void mapped_fork_prepare(void);
void mapped_fork_parent(void);
void mapped_fork_child(void);

#endif
