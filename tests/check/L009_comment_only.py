# file: error[CAKE-L009]: the file defines no `@cake.schedule` function
