#include "../src/ringbuf.h"
#include "check.h"

int main(void) {
    ringbuf rb;
    rb_init(&rb);
    for (int i = 0; i < RB_CAPACITY; i++)
        CHECK(rb_push(&rb, i));
    CHECK(!rb_push(&rb, 99));
    return failures != 0;
}
