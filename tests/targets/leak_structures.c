/* Test target for the leak kinds (issue 49): a list and a tree lost whole, a cache kept until exit, a dropped buffer.
 *
 * Expected, as memcheck says (tests/e2e/test_leak_kinds.py checks it):
 *   definitely lost  list_node 1 x 64, tree_node 1 x 32, drop_buffer 1 x 1000
 *   indirectly lost  list_node 9 x 64, tree_node 14 x 32
 *   still reachable  cache_node 100 x 64 (from the global cache_head, then node to node)
 * Each kind has an allocating function of its own, so that the paths say which is which.  No stdio: its buffer
 * would be one more block. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "scrub.h"

struct node {
    struct node *next;
    char payload[56];
};

struct tree {
    struct tree *left, *right;
    long key, spare;
};

struct node *cache_head;

static struct node *list_node(struct node *next) {
    struct node *n = malloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->next = next;
    return n;
}

static struct node *cache_node(struct node *next) {
    struct node *n = malloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->next = next;
    return n;
}

static struct tree *tree_node(int depth, long key) {
    struct tree *t = malloc(sizeof *t);
    t->key = key;
    t->spare = 0;
    t->left = depth > 1 ? tree_node(depth - 1, 2 * key) : NULL;
    t->right = depth > 1 ? tree_node(depth - 1, 2 * key + 1) : NULL;
    return t;
}

/* The head is dropped when this returns: its frame is below the stack pointer from then on, scanned by neither. */
static void lose_list(void) {
    struct node *head = NULL;
    for (int i = 0; i < 10; i++)
        head = list_node(head);
}

static void lose_tree(void) {
    struct tree *volatile root = tree_node(4, 1); /* 15 nodes */
    (void)root;
}

static void drop_buffer(void) {
    char *volatile buffer = malloc(1000);
    memset(buffer, 'x', 1000);
}

static void fill_cache(void) {
    for (int i = 0; i < 100; i++)
        cache_head = cache_node(cache_head);
}

int main(void) {
    fill_cache();
    lose_list();
    lose_tree();
    drop_buffer();
    scrub();
    return 0;
}
