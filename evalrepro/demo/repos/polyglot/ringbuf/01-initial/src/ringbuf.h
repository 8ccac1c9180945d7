#ifndef RINGBUF_H
#define RINGBUF_H

#include <stdbool.h>

#define RB_CAPACITY 4

typedef struct {
    int items[RB_CAPACITY];
    unsigned head; /* next slot to read */
    unsigned tail; /* next slot to write */
    unsigned count;
} ringbuf;

void rb_init(ringbuf *rb);
bool rb_push(ringbuf *rb, int value);
bool rb_pop(ringbuf *rb, int *value);
unsigned rb_len(const ringbuf *rb);

#endif
