/* main.c — the ganctl program: options, configuration, plugins, then the run. */
#include "config.h"

#include <stdio.h>
#include <ganctl/ganctl.h>

int main(void)
{
    printf("ganctl %s\n", gan_version());
    return 0;
}
