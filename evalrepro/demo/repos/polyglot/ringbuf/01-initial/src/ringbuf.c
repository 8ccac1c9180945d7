#include "ringbuf.h"

void rb_init(ringbuf *rb) {
    rb->head = rb->tail = rb->count = 0;
}

bool rb_push(ringbuf *rb, int value) {
    if (rb->count == RB_CAPACITY)
        return false;
    rb->items[rb->tail] = value;
    rb->tail = (rb->tail + 1) % RB_CAPACITY;
    rb->count++;
    return true;
}

bool rb_pop(ringbuf *rb, int *value) {
    if (rb->count == 0)
        return false;
    *value = rb->items[rb->head];
    rb->head = (rb->head + 1) % RB_CAPACITY;
    rb->count--;
    return true;
}

unsigned rb_len(const ringbuf *rb) {
    /* The slots between the read and the write position. */
    return rb->tail - rb->head;
}
