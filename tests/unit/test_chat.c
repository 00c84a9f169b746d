/* test_chat.c: the built-in chat templates render exactly what llama.cpp's "gemma" and
 * "chatml" templates render. */
#include <string.h>

#include "check.h"
#include "model/chat.h"

static void expect(rf_chat_format f, const rf_chat_msg *m, size_t n, bool gen, const char *want) {
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK(rf_chat_render(f, m, n, gen, &b, &err) == RF_OK);
    CHECK_MSG(b.data && strcmp((const char *)b.data, want) == 0, "got:\n%s\nwant:\n%s",
              b.data ? (const char *)b.data : "(null)", want);
    rf_buf_free(&b);
}

int main(void) {
    rf_chat_msg one[] = {{"user", "  What is 2+2?\n"}};
    expect(RF_CHAT_GEMMA, one, 1, true,
           "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n");
    rf_chat_msg sys[] = {{"system", " Be brief. "}, {"user", "Why is the sky blue?"}};
    expect(RF_CHAT_GEMMA, sys, 2, true,
           "<start_of_turn>user\nBe brief.\n\nWhy is the sky blue?<end_of_turn>\n"
           "<start_of_turn>model\n");
    rf_chat_msg conv[] = {{"user", "hi"}, {"assistant", "Hello! "}, {"user", "bye"}};
    expect(RF_CHAT_GEMMA, conv, 3, true,
           "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
           "<start_of_turn>user\nbye<end_of_turn>\n<start_of_turn>model\n");
    expect(RF_CHAT_GEMMA, conv, 2, false,
           "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n");
    expect(RF_CHAT_CHATML, sys, 2, true,
           "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\nWhy is the sky "
           "blue?<|im_end|>\n<|im_start|>assistant\n");
    rf_chat_msg bad[] = {{"user", NULL}};
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_error err = {0};
    CHECK(rf_chat_render(RF_CHAT_GEMMA, bad, 1, true, &b, &err) == RF_ERR_ARG);
    rf_buf_free(&b);
    return check_summary("test_chat");
}
