#include "../src/ringbuf.h"
#include "check.h"

int main(void) {
    ringbuf rb;
    int value = 0;
    rb_init(&rb);
    CHECK(rb_len(&rb) == 0);
    CHECK(rb_push(&rb, 1));
    CHECK(rb_push(&rb, 2));
    CHECK(rb_len(&rb) == 2);
    CHECK(rb_pop(&rb, &value) && value == 1);
    CHECK(rb_pop(&rb, &value) && value == 2);
    CHECK(!rb_pop(&rb, &value));
    return failures != 0;
}
